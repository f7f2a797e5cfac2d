"""The LLM path of the revision layer against a real local HTTP server speaking the chat-completions API,
through the real `openai` client (the strict, cached client the LLM resource builds): the teacher returns
claims in its strict schema and they become claims; the fact adjudicator decides what the rules cannot
settle (two values said at the same time), is cached and accounted in `llm_calls`."""

from __future__ import annotations

import json
import re
from datetime import datetime

from sqlalchemy import select

from memory_assets.common import report_figures
from memory_assets.runner import CorpusRunner
from memory_core.ontology.strict import assert_strict_schema
from memory_core.revision.adjudication import FactDecision, adjudication_request
from memory_core.revision.history import ClaimView, StateDraft
from memory_core.store.schema import claims, fact_states, llm_calls
from memory_query.fact_history import fact_history
from memory_query.pool import reading
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from tests.chat_server import _MESSAGE, Reply
from tests.revision_samples import CONFLICT, MOVES, build, write_chat

CONFLICT_TIME = datetime(2024, 10, 5, 12, 0)
_FAVOURITE = re.compile(r"My favourite (\w+) is ([\w ]+)\.")
_LIVE = re.compile(r"I live in (\w+)")


def _schema_name(request: dict) -> str:
    return request["response_format"]["json_schema"]["name"]


def _extraction_with_claims(request: dict) -> Reply:
    """A teacher that states the facts of "My favourite X is Y." and "I live in Z" as claims."""
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    concepts = []
    for ref, speaker, kind, text in _MESSAGE.findall(user):
        if kind != "person":
            continue
        for pattern, slot in ((_FAVOURITE, "favourite"), (_LIVE, "residence")):
            m = pattern.search(text)
            if not m:
                continue
            quote = m.group(0).rstrip(".")
            qualifier, value = (m.group(1), m.group(2)) if slot == "favourite" else ("", m.group(1))
            concepts.append(
                {
                    "title": f"{speaker} {slot} {value}",
                    "type": "belief",
                    "description": f"{speaker}: {quote}.",
                    "aliases": [],
                    "confidence": 0.8,
                    "evidence": [
                        {
                            "message_ref": ref,
                            "quote": quote,
                            "char_start": text.index(quote),
                            "char_end": text.index(quote) + len(quote),
                        }
                    ],  # fmt: skip
                    "relations": [],
                    "claims": [
                        {
                            "subject": "speaker",
                            "slot": slot,
                            "qualifier": qualifier,
                            "value": value,
                            "polarity": "affirmed",
                            "valid_from": "",
                        }
                    ],  # fmt: skip
                }
            )
    return Reply(content=json.dumps({"concepts": concepts, "reactions": []}))


def _supersede(request: dict) -> Reply:
    later = json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))["later"]
    answer = {
        "decision": "supersede",
        "rationale": f"the later message settles on {later['value']}",
        "confidence": 0.7,
    }
    return Reply(content=json.dumps(answer))


def _create(_request: dict) -> Reply:
    return Reply(
        content=json.dumps({"decision": "create", "concept_id": "", "rationale": "new", "confidence": 0.6})
    )


def _runner(home, instance, server) -> CorpusRunner:
    llm = LLMResource(
        api_key="test-key", base_url=server.url, backoff_base_s=0.01, timeout_s=5.0, max_retries=1
    )
    return CorpusRunner(
        home,
        instance,
        resources={"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=256), "llm": llm},
    )


def test_the_adjudication_prompt_is_paired_with_a_strict_model():
    assert_strict_schema(FactDecision)
    view = ClaimView("c1", "m1", "", "user", "the user", "favourite", "favourite:drink", "green tea", "green tea",
                     "affirmed", CONFLICT_TIME, CONFLICT_TIME, "My favourite drink is green tea")  # fmt: skip
    state = StateDraft("k", "user", "the user", "favourite", "favourite:drink", "green tea", "green tea", CONFLICT_TIME,
                       "", "m1", claims=[view])  # fmt: skip
    request = adjudication_request([state], view)
    payload = json.loads(request.user)
    assert request.response_model is FactDecision and payload["attribute"] == "favourite:drink"
    assert payload["earlier"][0]["quote"] == "My favourite drink is green tea"


def test_llm_claims_and_adjudication_through_the_real_client(home, instance, tmp_path, chat_server):
    chat_server.rules = [
        (lambda r: _schema_name(r) == "SegmentExtraction", _extraction_with_claims),
        (lambda r: _schema_name(r) == "FactDecision", _supersede),
        (lambda r: _schema_name(r) == "AdjudicationDecision", _create),
    ]
    runner = _runner(home, instance, chat_server)
    path = write_chat(tmp_path / "chat.jsonl", MOVES + CONFLICT)
    run = build(runner, "llm", path)
    assert run.success
    store = home.corpus("llm")
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(claims.c.attribute, claims.c.value, claims.c.extractor, claims.c.state)
        ).all()
        decided = conn.execute(
            select(
                fact_states.c.value, fact_states.c.status, fact_states.c.decided_by, fact_states.c.rationale
            )
            .where(fact_states.c.attribute == "favourite:drink", fact_states.c.superseded_at.is_(None))
            .order_by(fact_states.c.valid_from)
        ).all()
        calls = conn.execute(select(llm_calls.c.stage, llm_calls.c.outcome, llm_calls.c.cache_hit)).all()
    assert {(a, v) for a, v, _, _ in rows} >= {("residence", "Portland"), ("residence", "Seattle"),
                                                ("favourite:drink", "green tea"), ("favourite:drink", "black coffee")}  # fmt: skip
    assert {e for _, _, e, _ in rows} == {
        "llm:gpt-4o-mini/extraction/v3"
    }  # no scan of messages an LLM answered
    # same time, no change said: the rules could not settle it, the LLM did (and the rules the rest)
    assert [(v, s) for v, s, _, _ in decided] == [("green tea", "superseded"), ("black coffee", "current")]
    assert decided[0].decided_by == "llm:gpt-4o-mini" and "black coffee" in decided[0].rationale
    adjudications = [c for c in calls if c.stage == "fact_states"]
    assert adjudications == [("fact_states", "ok", False)]
    with reading("llm", home) as reader:
        assert {g["slot"]: g["current"] for g in fact_history(reader)}["residence"] == "Seattle"

    # a rerun asks nothing new: the answer comes from the cache (and is accounted as a hit)
    answered = len(chat_server.answered)
    again = runner.materialize("llm", selection=["fact_states"])
    assert again.success and len(chat_server.answered) == answered
    with store.staging.connect() as conn:
        hits = (
            conn.execute(select(llm_calls.c.cache_hit).where(llm_calls.c.stage == "fact_states"))
            .scalars()
            .all()
        )
    assert hits == [False, True]


def test_without_an_answer_the_rules_fallback_disputes(home, instance, tmp_path, chat_server):
    chat_server.rules = [
        (lambda r: _schema_name(r) == "SegmentExtraction", _extraction_with_claims),
        (
            lambda r: _schema_name(r) == "FactDecision",
            lambda r: Reply(status=503, error_message="overloaded"),
        ),
        (lambda r: _schema_name(r) == "AdjudicationDecision", _create),
    ]
    run = build(_runner(home, instance, chat_server), "llm", write_chat(tmp_path / "chat.jsonl", CONFLICT))
    assert run.success
    meta = report_figures(run.result.asset_materializations_for_node("fact_states")[0].metadata)
    assert meta["adjudications"] == {"failed": 1} and meta["conflicts"] == 2
    assert meta["adjudicator"] == "llm:gpt-4o-mini"

"""The LLM adjudicator of the memory loop's ambiguous band against a real local HTTP server speaking the
chat-completions API, through the real `openai` client (the strict, cached client the LLM resource builds):
the router asks only inside the band, the answer decides, a failed call falls back to the rule with the
reason kept, every call is cached and accounted. Wired into the `canonical_concepts` asset."""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg
from sqlalchemy import select

from memory_assets.definitions import defs
from memory_assets.partitions import corpus_partitions
from memory_core.concepts import action_log, metrics
from memory_core.corpora import plan_corpora, register
from memory_core.embeddings import HashingEmbedder
from memory_core.memory_loop.adjudication import AdjudicationDecision, LLMAdjudicator
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.retriever import RetrievalHit
from memory_core.memory_loop.router import ConceptView, Router, RouterRules
from memory_core.ontology.strict import assert_strict_schema
from memory_core.store.schema import action_log as action_log_table
from memory_core.store.schema import llm_calls, mentions, residuals
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from tests.chat_server import Reply, ok, status
from tests.conftest import stage_resources, write_jsonl
from tests.loop_samples import MENTIONS, add_mentions, build_corpus, concept, jsonl_rows, mention

EMBEDDER = HashingEmbedder(256)
# the hashing embedder's cosines run lower than a sentence model's: a shared name needs less agreement
HASHING = LoopConfig(rules=RouterRules(alias_attach_similarity=0.3, fact_alias_similarity=0.3), batch_size=4)
# a restatement of the marathon goal (the Semantic Mapper's second fact from the same message): cosine 0.85
# to the goal's key under the hashing embedder, inside the facts' ambiguous band [0.80, 0.88)
TRAINING = mention(
    "m7",
    "I'm training four days a week",
    "Dana trains for the Berlin marathon",
    "goal",
    "Dana signed up for the Berlin marathon in September 2024 and trains four days a week.",
    0.8,
)


def _client(server, home, **kw):
    opts = dict(api_key="test-key", base_url=server.url, backoff_base_s=0.01, timeout_s=5.0, max_retries=1)
    return LLMResource(**{**opts, **kw}).build_client(home)


def _asks_adjudication(request: dict) -> bool:
    return request["response_format"]["json_schema"]["name"] == "AdjudicationDecision"


def _offered(request: dict) -> list[dict]:
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    return json.loads(user)["existing_concepts"]


def _attach_first(request: dict) -> Reply:
    """The same thing as the first offered concept."""
    first = _offered(request)[0]
    answer = {
        "decision": "attach",
        "concept_id": first["concept_id"],
        "rationale": f"both say Dana is preparing for the Berlin marathon ({first['title']})",
        "confidence": 0.85,
    }
    return Reply(content=json.dumps(answer))


def _decision(decision: str, concept_id: str = "", rationale: str = "the texts decide") -> str:
    return json.dumps(
        {"decision": decision, "concept_id": concept_id, "rationale": rationale, "confidence": 0.8}
    )


def cand(**kw) -> Candidate:
    base = dict(
        mention_id="m-1", segment_id="s-1", message_id="msg-1", conversation_id="c-1", span_start=0,
        span_end=3, surface="Max", title="Max", type="entity", description="Dana's dog", aliases=(),
        relations=(), confidence=0.8, extractor="t", message_created_at=datetime(2024, 1, 5, 9, 0),
    )  # fmt: skip
    return Candidate(**{**base, **kw})


def hit(cid: str, score: float, similarity: float) -> RetrievalHit:
    return RetrievalHit(cid, score, similarity, 0.0, 0.0, 1.0)


# names: the band is fused score in [ambiguous_score 0.60, attach_score 0.70)
BAND = [hit("k1", 0.65, 0.6), hit("k2", 0.5, 0.4)]
VIEWS = {
    "k1": ConceptView(concept("k1", "Max", "entity", "Dana's dog"), 0.8, False),
    "k2": ConceptView(concept("k2", "Maxine", "entity", "Omar's coworker"), 0.8, False),
}


def test_the_router_asks_the_llm_inside_the_band_only(home, chat_server):
    assert assert_strict_schema(AdjudicationDecision)
    chat_server.queue = [
        ok(_decision("attach", "k1", "both are Dana's dog")),
        ok(_decision("attach", "k9", "a concept that was not offered")),
        ok(_decision("reject", rationale="a greeting, not a concept")),
    ]
    adjudicator = LLMAdjudicator(_client(chat_server, home))
    router = Router(adjudicator=adjudicator)
    d = router.route(cand(), BAND, VIEWS)
    assert (d.action, d.concept_id, d.reason_code) == ("attach", "k1", "match")
    assert "both are Dana's dog" in d.rationale and d.scores["adjudicator"]["name"] == "llm:gpt-4o-mini"
    sent = chat_server.requests[0]
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert [c["concept_id"] for c in _offered(sent)] == ["k1"]  # only the concepts inside the band
    # a changed candidate is a new question: the model's answers decide, within the rules
    d = router.route(cand(mention_id="m-2", description="Dana's dog Max"), BAND, VIEWS)
    assert (d.action, d.reason_code) == ("create", "adjudicator_invalid") and "'k9'" in d.rationale
    d = router.route(cand(mention_id="m-3", description="hi Max"), BAND, VIEWS)
    assert (d.action, d.reason_code) == ("reject", "adjudicator_reject")
    # the first question again: answered from the cache, no request
    d = router.route(cand(), BAND, VIEWS)
    assert d.concept_id == "k1" and len(chat_server.requests) == 3 and adjudicator.cache_hits == 1
    # outside the band the model is never asked
    assert router.route(cand(), [hit("k1", 0.95, 0.95)], VIEWS).action == "attach"
    assert router.route(cand(), [hit("k1", 0.3, 0.3)], VIEWS).reason_code == "novel"
    assert len(chat_server.requests) == 3


def test_a_failed_call_falls_back_to_the_rule_and_says_why(home, chat_server):
    chat_server.queue = [status(503, "overloaded")] * 2 + [ok("not json"), ok('{"decision": "maybe"}')]
    router = Router(adjudicator=LLMAdjudicator(_client(chat_server, home)))
    d = router.route(cand(), BAND, VIEWS)
    assert (d.action, d.reason_code) == ("create", "adjudicator_failed")
    assert "LLM error" in d.rationale and "HTTP 503" in d.rationale and "rule: create" in d.rationale
    assert d.scores["adjudicator"] == {"name": "llm:gpt-4o-mini", "error": "AdjudicationFailed"}
    # an answer that fails the schema twice (the error fed back once) is no answer either
    d = router.route(cand(mention_id="m-2"), BAND, VIEWS)
    assert d.reason_code == "adjudicator_failed" and "LLM invalid" in d.rationale
    assert len(chat_server.requests) == 4


def test_consolidation_lets_the_llm_decide_the_band_and_accounts_for_it(home, tmp_path, chat_server):
    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    [training] = add_mentions(store, [TRAINING])
    chat_server.rules = [(_asks_adjudication, _attach_first)]
    adjudicator = LLMAdjudicator(_client(chat_server, home), store)
    report = consolidate(store, EMBEDDER, HASHING, adjudicator=adjudicator)
    assert len(chat_server.requests) == 1 and report.adjudications == {"attach": 1}
    with store.staging.connect() as conn:
        row = (
            conn.execute(select(action_log_table).where(action_log_table.c.mention_id == training))
            .mappings()
            .one()
        )
        goal = conn.execute(
            select(mentions.c.consolidated_id).where(
                mentions.c.title == "Dana signed up for the Berlin marathon"
            )
        ).scalars()
        calls = conn.execute(select(llm_calls.c.stage, llm_calls.c.outcome, llm_calls.c.segment_id)).all()
        linked = conn.execute(select(mentions.c.consolidated_id, mentions.c.segment_id).where(
            mentions.c.mention_id == training)).one()  # fmt: skip
        assert action_log.replay_differences(conn)["differing"] == []
    assert (
        row["action"] == "attach"
        and row["concept_id"] in set(goal)
        and linked.consolidated_id == row["concept_id"]
    )
    assert row["scores"]["adjudicator"]["decision"] == "attach" and "Berlin marathon" in row["rationale"]
    assert calls == [("memory_loop", "ok", linked.segment_id)]


def test_an_outage_leaves_the_rule_decision_and_a_residual(home, tmp_path, chat_server):
    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    [training] = add_mentions(store, [TRAINING])
    chat_server.rules = [(_asks_adjudication, status(503, "overloaded"))]
    report = consolidate(
        store, EMBEDDER, HASHING, adjudicator=LLMAdjudicator(_client(chat_server, home), store)
    )
    assert report.adjudications == {"failed": 1} and report.reasons["adjudicator_failed"] == 1
    with store.staging.connect() as conn:
        kept = conn.execute(select(residuals).where(residuals.c.mention_id == training)).mappings().all()
        outcomes = conn.execute(select(llm_calls.c.outcome)).scalars().all()
        created = conn.execute(  # its own decision (an instance of a goal also supports it: another row)
            select(action_log_table.c.action).where(
                action_log_table.c.mention_id == training,
                action_log_table.c.scores["reason_code"].as_string() != "instance_of",
            )
        ).scalar_one()
        linked = conn.execute(select(mentions.c.consolidated_id).where(mentions.c.mention_id == training))
        assert linked.scalar_one() is not None
    assert created == "create" and outcomes == ["error"]
    assert [(r["stage"], r["reason_code"]) for r in kept] == [
        ("memory_loop_adjudication", "adjudicator_failed")
    ]
    assert "HTTP 503" in kept[0]["reason"]
    # the mention is linked (the rule created its concept), never counted as rejected or pending
    totals = metrics.totals(store)
    assert (
        totals["mentions_pending"] == 0
        and totals["mentions_linked"] + totals["mentions_rejected"] == len(MENTIONS) + 1
    )


def _materialize(instance, home, llm: LLMResource):
    return dg.materialize(
        list(defs.assets),
        selection=dg.AssetSelection.assets("canonical_concepts"),
        instance=instance,
        partition_key="dana",
        resources=stage_resources(home, embeddings=EmbeddingsResource(provider="hashing"), llm=llm),
        run_config={"ops": {"canonical_concepts": {"config": {"alias_attach_similarity": 0.3,
                                                               "fact_alias_similarity": 0.3}}}},
    )  # fmt: skip


def test_the_asset_uses_the_configured_llm_and_says_so(home, instance, tmp_path, chat_server):
    register(home, plan_corpora("dana", write_jsonl(tmp_path / "dana.jsonl", jsonl_rows())))
    instance.add_dynamic_partitions(corpus_partitions.name, ["dana"])
    built = dg.materialize(
        [*defs.assets],
        selection=dg.AssetSelection.assets("messages", "segments"),
        instance=instance,
        partition_key="dana",
        resources=stage_resources(home),
    )
    assert built.success
    add_mentions(home.corpus("dana"), [*MENTIONS, TRAINING])
    chat_server.rules = [(_asks_adjudication, _attach_first)]
    result = _materialize(instance, home, LLMResource(api_key="test-key", base_url=chat_server.url))
    errors = [e for e in result.get_asset_check_evaluations() if e.severity == dg.AssetCheckSeverity.ERROR]
    assert result.success and len(errors) == 3 and all(e.passed for e in errors)
    meta = {
        k: v.value
        for k, v in result.asset_materializations_for_node("canonical_concepts")[0].metadata.items()
    }
    assert (
        meta["adjudicator"] == "llm:gpt-4o-mini" and meta["router_rules"]["adjudicator"] == "llm:gpt-4o-mini"
    )
    assert meta["adjudications"] == {"attach": 1} and len(chat_server.requests) == 1

"""The gardener's optional LLM paths against a real local HTTP server speaking the chat-completions API,
through the real `openai` client (the strict, cached client the LLM resource builds)."""

from __future__ import annotations

import json

from sqlalchemy import select

from memory_core.concepts.store import table_hash
from memory_core.embeddings import HashingEmbedder
from memory_core.gardener import TriageConfig, apply_proposals, list_actions, run_triage
from memory_core.gardener.refactor.llm_chooser import GardenerDecision, LLMChooser
from memory_core.gardener.triage.llm_review import TriageReview
from memory_core.ontology.strict import assert_strict_schema
from memory_core.store.schema import lifecycle_proposals, llm_calls, residuals
from memory_resources.llm import LLMResource
from tests.chat_server import Reply, status
from tests.gardener_samples import build_gardener_corpus

EMBEDDER = HashingEmbedder(256)
SMALL = TriageConfig(macro_spread_ref=3, macro_support_ref=3)


def _client(server, home, **kw):
    return LLMResource(
        api_key="test-key", base_url=server.url, backoff_base_s=0.01, timeout_s=5.0, **kw
    ).build_client(home)


def _system(request: dict) -> str:
    return next((m["content"] for m in request["messages"] if m["role"] == "system"), "")


def _user(request: dict) -> dict:
    return json.loads(next(m["content"] for m in request["messages"] if m["role"] == "user"))


def _review(request: dict) -> Reply:
    """Keep every proposal except noise."""
    verdicts = [
        {
            "ref": p["ref"],
            "verdict": "drop" if p["category"] == "noise" else "keep",
            "score": 0.9,
            "rationale": f"the quotes support the {p['category']}",
        }
        for p in _user(request)["proposals"]
    ]
    return Reply(content=json.dumps({"verdicts": verdicts}))


def test_response_models_are_strict():
    assert assert_strict_schema(TriageReview) and assert_strict_schema(GardenerDecision)


def test_llm_triage_review_is_batched_cached_and_accounted(home, tmp_path, chat_server):
    store = home.corpus("garden")
    build_gardener_corpus(store, tmp_path)
    chat_server.rules = [(lambda r: "maintenance proposals" in _system(r), _review)]
    client = _client(chat_server, home)
    report = run_triage(store, EMBEDDER, SMALL, client=client, llm_batch_size=2)
    assert len(chat_server.answered) == 2  # 4 offline proposals, 2 per call
    assert report.counts == {"merge": 1, "split": 1, "macro_concept": 1, "noise": 0}
    assert report.llm.as_dict()["verdict_drop"] == 1 and report.llm.failed_batches == 0
    for p in report.proposals:
        assert p.proposer.startswith("offline+llm:") and "LLM review" in p.rationale
    with store.staging.connect() as conn:
        calls = conn.execute(select(llm_calls.c.stage, llm_calls.c.cache_hit)).all()
    assert calls == [("gardener_triage", False)] * 2
    table = table_hash(store, [lifecycle_proposals])
    again = run_triage(store, EMBEDDER, SMALL, client=client, llm_batch_size=2)
    assert len(chat_server.requests) == 2  # every batch answered from the cache
    assert again.llm.cache_hits == 2 and table_hash(store, [lifecycle_proposals]) == table


def test_llm_triage_outage_keeps_offline_proposals_and_records_why(home, tmp_path, chat_server):
    store = home.corpus("garden")
    build_gardener_corpus(store, tmp_path)
    chat_server.rules = [(lambda r: True, status(503, "overloaded"))]
    report = run_triage(
        store, EMBEDDER, SMALL, client=_client(chat_server, home, max_retries=1), llm_batch_size=10
    )
    assert report.counts == {"merge": 1, "split": 1, "macro_concept": 1, "noise": 1}
    assert report.llm.failed_batches == 1 and {p.proposer for p in report.proposals} == {"offline"}
    with store.staging.connect() as conn:
        reasons = conn.execute(select(residuals.c.stage, residuals.c.reason_code)).all()
    assert reasons == [("gardener_triage", "llm_error")]


def _decide(request: dict) -> Reply:
    """Merge after reading the source; split without citing anything (refused); nothing else."""
    body = _user(request)
    category = body["proposal"]["category"]
    concepts = body["concepts"]
    decision = {"decision": "no_action", "segment_ids": [], "actions": [], "rationale": "not convinced"}
    empty = {
        "new_title": "",
        "new_type": "",
        "new_description": "",
        "new_aliases": [],
        "relation": "",
        "groups": [],
    }
    if category == "merge" and not body["source_segments"]:
        decision = {
            "decision": "read_source_segments",
            "segment_ids": [c["evidence"][0]["segment_id"] for c in concepts],
            "actions": [],
            "rationale": "check both contexts first",
        }
    elif category == "merge":
        decision = {
            "decision": "act",
            "segment_ids": [],
            "actions": [
                {
                    "action": "merge_concepts",
                    "concept_ids": [c["concept_id"] for c in concepts],
                    **empty,
                    "cited_message_ids": [c["evidence"][0]["message_id"] for c in concepts],
                    "rationale": "both segments describe Dana's Flutter garden planner app",
                }
            ],
            "rationale": "one app",
        }
    elif category == "split":
        mention_ids = concepts[0]["all_mention_ids"]
        decision = {
            "decision": "act",
            "segment_ids": [],
            "actions": [
                {
                    "action": "split_concept",
                    "concept_ids": [concepts[0]["concept_id"]],
                    **{
                        **empty,
                        "groups": [
                            {
                                "title": "Max",
                                "type": "entity",
                                "description": "a",
                                "mention_ids": mention_ids[:2],
                            },
                            {
                                "title": "Max",
                                "type": "entity",
                                "description": "b",
                                "mention_ids": mention_ids[2:],
                            },
                        ],
                    },
                    "cited_message_ids": [],
                    "rationale": "two different Maxes",
                }
            ],
            "rationale": "split",
        }
    return Reply(content=json.dumps(decision))


def test_llm_chooser_reads_on_request_and_its_uncited_actions_are_refused(home, tmp_path, chat_server):
    store = home.corpus("garden")
    ids = build_gardener_corpus(store, tmp_path)
    run_triage(store, EMBEDDER, SMALL)
    chat_server.rules = [(lambda r: "maintain a person's long-term memory" in _system(r), _decide)]
    chooser = LLMChooser(_client(chat_server, home))
    result = apply_proposals(store, EMBEDDER, chooser, dry_run=False, run_id="llm-run")
    body = result.body
    assert body["chooser"].startswith("llm:")
    assert body["actions_by_type"] == {"merge_concepts": 1} and body["execution_errors"] == 1
    audit = {a["action"]: a for a in list_actions(store, run_id="llm-run")}
    assert audit["merge_concepts"]["status"] == "applied" and audit["merge_concepts"]["read_segment_ids"]
    assert audit["merge_concepts"]["concept_ids"][:2] == [ids["app"], ids["app_duplicate"]]
    assert (
        audit["split_concept"]["status"] == "refused" and "cites no source" in audit["split_concept"]["error"]
    )
    # merge: read request + decision; split, noise, hub: one call each
    assert len(chat_server.answered) == 5
    with store.staging.connect() as conn:
        stages = set(conn.execute(select(llm_calls.c.stage)).scalars())
    assert stages == {"gardener"}

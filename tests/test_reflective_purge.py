"""A purge that purges: after `memory-os reactions purge`, no place the reactions reached still holds them
(the reflective store, the LLM cache, residuals, the graph, the concept layer, Dagster's metadata), and a
rebuild with another teacher does not bring them back until the user lifts the tombstones."""

from __future__ import annotations

import json
from datetime import datetime

import dagster as dg
from click.testing import CliRunner
from sqlalchemy import select

from memory_assets.common import report_figures
from memory_assets.extraction.reflective_metadata import stored_state_names
from memory_assets.instance import memory_instance
from memory_assets.runner import CorpusRunner
from memory_cli.main import cli
from memory_core.corpora import plan_corpora
from memory_core.extraction.reflective import is_reflective
from memory_core.extraction.reflective_purge import archive_reflective_concepts, residue
from memory_core.graph import open_graph
from memory_core.llm.cache import ResponseCache
from memory_core.store.schema import canonical_concepts, mentions, user_reactions
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from tests.chat_server import Reply, default_answer
from tests.conftest import write_jsonl

ROWS = [
    ("u1", "user", "I am frustrated that the Shinkansen sold out."),
    ("a1", "assistant", "Noted: the Shinkansen is sold out."),
    ("u2", "user", "My friend Aiko recommended Nara instead."),
    ("a2", "assistant", "Nara is lovely in spring."),
]
BUILD = ["messages", "segments", "mentions", "user_reactions", "canonical_concepts", "graph"]
GRAPH_WITH_REACTIONS = {"graph": {"config": {"include_reflective": True}}}


def answer(request: dict) -> Reply:
    """The scripted server's extraction, plus a tension phrased as a feeling and a reaction on the
    assistant's message (rejected by the mapper: its payload lands in residuals)."""
    value = json.loads(default_answer(request))
    user = next(m["content"] for m in request["messages"] if m["role"] == "user")
    if "Shinkansen sold out" in user:
        value["concepts"].append(
            {
                "title": "The user is frustrated about the Shinkansen",
                "type": "tension",
                "description": "The user is frustrated that the Shinkansen sold out.",
                "aliases": [],
                "confidence": 0.7,
                "evidence": [
                    {"message_ref": "m1", "quote": "I am frustrated", "char_start": 0, "char_end": 15}
                ],
                "relations": [],
                "claims": [],
            }
        )
        value["reactions"].append(
            {
                **value["reactions"][0],
                "reaction": {**value["reactions"][0]["reaction"], "evidence_message_id": "m2"},
                "cue": "Noted",
            }
        )
    return Reply(content=json.dumps(value))


def _runner(home, instance, server, cache: bool = True) -> CorpusRunner:
    llm = LLMResource(
        teacher="openai", api_key="sk-test-purge-key-0001", base_url=server.url, use_cache=cache
    )
    return CorpusRunner(
        home,
        instance,
        resources={"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=64), "llm": llm},
    )


def _reactions(store) -> list[dict]:
    with store.reflective.connect() as conn:
        return [dict(r) for r in conn.execute(select(user_reactions)).mappings()]


def test_purge_leaves_nothing_anywhere_and_a_rebuild_does_not_bring_reactions_back(
    home, chat_server, tmp_path
):
    chat_server.rules.append((lambda req: True, answer))
    instance = memory_instance(home)  # the one the CLI opens: DAGSTER_HOME of `home`
    path = write_jsonl(
        tmp_path / "trip.jsonl",
        [
            {
                "id": i,
                "conversation_id": "c1",
                "role": role,
                "text": text,
                "created_at": 1_700_000_000 + 60 * n,
            }
            for n, (i, role, text) in enumerate(ROWS)
        ],
    )
    runner = _runner(home, instance, chat_server)
    runner.register(plan_corpora("trip", path))
    assert runner.materialize("trip", BUILD, GRAPH_WITH_REACTIONS).success
    store = home.corpus("trip")
    # the tension phrased as a feeling never reached the concept layer
    with store.staging.connect() as conn:
        found = [(r.type, r.title) for r in conn.execute(select(mentions.c.type, mentions.c.title))]
    assert found and not any(is_reflective(t, title) for t, title in found)
    assert ("tension", "The user is frustrated about the Shinkansen") not in found
    # a materialisation stored by an earlier version, whose metadata named states
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            "user_reactions", partition="trip", metadata={"by_state": [{"state": "Frustration", "count": 1}]}
        )
    )
    cache = ResponseCache.in_dir(home.cache_dir)
    graph = open_graph(store)
    try:
        before = residue(store, cache, [graph])
    finally:
        graph.close()
    before["dagster_metadata"] = stored_state_names(instance, "trip")
    assert before == {
        "reflective_store": 1,
        "llm_cache": 1,
        "residuals": 1,
        "graph": 1,
        "concept_layer": 0,
        "dagster_metadata": 2,  # SQLite storage: the run's copy of the event and the asset index's
    }

    out = CliRunner().invoke(cli, ["--home", str(home.root), "reactions", "purge", "trip", "--yes"])
    assert out.exit_code == 0, out.output
    assert (
        "left: reflective_store 0, llm_cache 0, residuals 0, graph 0, concept_layer 0, dagster_metadata 0"
        in out.output
    )
    assert "4 messages tombstoned" in out.output and "(2 Dagster metadata entries redacted)" in out.output
    # the bytes are gone too, not just the rows
    for db in (store.dir / "reflective.db", cache.path):
        for part in (db, db.with_name(db.name + "-wal")):
            assert not part.exists() or b"Frustration" not in part.read_bytes(), part
    # the concepts the cached answers held survive the purge: a rebuild costs no new call
    asked = len(chat_server.requests)
    assert runner.materialize("trip", BUILD, GRAPH_WITH_REACTIONS).success
    assert len(chat_server.requests) == asked and _reactions(store) == []

    # another teacher re-extracts every segment: the tombstones keep the reactions out
    offline = CorpusRunner(
        home, instance, resources={"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=64)}
    )
    rebuilt = offline.materialize("trip", BUILD, GRAPH_WITH_REACTIONS)
    assert rebuilt.success and _reactions(store) == []
    reaction_meta = report_figures(
        next(
            m
            for m in rebuilt.result.get_asset_materialization_events()
            if m.asset_key.to_user_string() == "user_reactions"
        ).materialization.metadata
    )
    assert reaction_meta["reactions_on_purged_messages"] == 1  # the offline lexicon's "frustrated"

    # the user asks for reactions again: a fresh answer (cache off) brings them back
    out = CliRunner().invoke(cli, ["--home", str(home.root), "reactions", "allow", "trip"])
    assert out.exit_code == 0 and "4 tombstones lifted" in out.output
    assert _runner(home, instance, chat_server, cache=False).materialize("trip", BUILD).success
    assert [r["state"] for r in _reactions(store)] == ["Frustration"]


def test_reflective_concepts_built_before_are_archived_with_an_action_log_row(home, tmp_path):
    """A corpus built before reflective mentions were withheld: its feeling-concepts leave the concept layer
    (archived, logged), the others stay."""
    from memory_core.concepts import action_log
    from memory_core.concepts.store import insert_concepts
    from memory_core.ingest.loader import ingest_file
    from memory_core.ontology.concepts import ConceptHypothesis, EvidenceSpan
    from memory_core.store.schema import messages

    store = home.corpus("old")
    ingest_file(
        store,
        write_jsonl(
            tmp_path / "o.jsonl",
            [
                {
                    "id": "m1",
                    "conversation_id": "c",
                    "role": "user",
                    "text": "I'm a bit anxious about the new job.",
                    "created_at": 1,
                },
                {
                    "id": "m2",
                    "conversation_id": "c",
                    "role": "user",
                    "text": "My left knee hurts after long runs.",
                    "created_at": 2,
                },
            ],
        ),
        "jsonl",
    )
    with store.source.connect() as conn:
        ids = {r.source_ref: (r.message_id, r.text) for r in conn.execute(select(messages))}
    now = datetime(2024, 1, 1)
    concepts = []
    for ref, title in (
        ("m1", "The user is a bit anxious about the new job"),
        ("m2", "The user's left knee hurts after long runs"),
    ):
        mid, text = ids[ref]
        span = EvidenceSpan(
            source_id="s", message_id=mid, text=text, confidence=0.7, char_start=0, char_end=len(text)
        )
        concepts.append(
            ConceptHypothesis(
                concept_id=f"k-{ref}",
                title=title,
                type="tension",
                description=title + ".",
                state="active",
                trust="stable",
                confidence=0.7,
                aliases=[],
                evidence_spans=[span],
                relations=[],
                revision_count=0,
                support_count=1,
                first_seen=now,
                last_seen=now,
                recorded_at=now,
                merged_into="",
            )
        )
    with store.staging.begin() as conn:
        insert_concepts(conn, concepts)
    assert [is_reflective(c.type, c.title) for c in concepts] == [True, False]
    assert archive_reflective_concepts(store, now) == 1
    with store.staging.connect() as conn:
        states = {r.concept_id: r.state for r in conn.execute(select(canonical_concepts))}
        logged = [r for r in action_log.read(conn) if r["actor"] == "reflective_purge"]
    assert states == {"k-m1": "archived", "k-m2": "active"}
    assert [(r["action"], r["concept_id"]) for r in logged] == [("archive", "k-m1")]
    assert residue(store)["concept_layer"] == 0


def test_retention_purges_like_a_purge_and_the_cache_cannot_bring_expired_reactions_back(
    home, chat_server, tmp_path
):
    """Reactions past their retention leave as a purge leaves: deleted, their cached answers redacted and
    their messages tombstoned, so a rebuild with another teacher and then the cached LLM answers again
    writes none of them back."""
    chat_server.rules.append((lambda req: True, answer))
    instance = memory_instance(home)
    rows = [
        {"id": i, "conversation_id": "c1", "role": role, "text": text, "created_at": 1_700_000_000 + 60 * n}
        for n, (i, role, text) in enumerate(ROWS)
    ]
    runner = _runner(home, instance, chat_server)
    runner.register(plan_corpora("trip", write_jsonl(tmp_path / "trip.jsonl", rows)))
    expire_now = {"extraction": {"config": {"reaction_retention_days": 0.0}}}
    run = runner.materialize("trip", BUILD, expire_now)
    assert run.success
    store = home.corpus("trip")
    cache = ResponseCache.in_dir(home.cache_dir)
    assert _reactions(store) == []  # expired by the run that wrote them
    left = residue(store, cache, [])
    assert left["reflective_store"] == 0 and left["llm_cache"] == 0 and left["residuals"] == 0, left

    offline = CorpusRunner(
        home, instance, resources={"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=64)}
    )
    assert offline.materialize("trip", BUILD).success and _reactions(store) == []
    asked = len(chat_server.requests)
    assert _runner(home, instance, chat_server).materialize("trip", BUILD).success  # answered from the cache
    assert len(chat_server.requests) == asked and _reactions(store) == []

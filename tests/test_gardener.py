"""Layer 2: the gardener's domain logic on a small authored corpus (hashing embeddings, no Dagster)."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import select

from memory_core.concepts import action_log
from memory_core.concepts.store import table_hash
from memory_core.embeddings import HashingEmbedder
from memory_core.gardener import (
    ChooserRules,
    RefusedActionError,
    RollbackConflictError,
    RuleBasedChooser,
    TriageConfig,
    apply_proposals,
    content_hash,
    list_actions,
    rollback_action,
    rollback_run,
    run_triage,
)
from memory_core.gardener.errors import GardenerError
from memory_core.gardener.refactor import Choice, Chooser, apply_action, run_refactor
from memory_core.gardener.refactor.actions import ActionBuilder, EvidenceGroup, PlannedAction
from memory_core.gardener.refactor.state import Workspace
from memory_core.store.schema import (
    action_log as action_log_table,
)
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    gardener_actions,
    lifecycle_proposals,
    llm_calls,
    mentions,
    staging_metadata,
)
from tests.gardener_samples import build_gardener_corpus

EMBEDDER = HashingEmbedder(256)
# the hub of the small corpus spreads over 3 conversations with 3 mentions: references scaled to its size
SMALL = TriageConfig(macro_spread_ref=3, macro_support_ref=3)


@pytest.fixture
def corpus(home, tmp_path):
    store = home.corpus("garden")
    ids = build_gardener_corpus(store, tmp_path)
    return store, ids


def _concept(store, cid) -> dict:
    with store.staging.connect() as conn:
        return dict(
            conn.execute(select(canonical_concepts).where(canonical_concepts.c.concept_id == cid))
            .mappings()
            .one()
        )


def _evidence_messages(store, cid) -> set[str]:
    with store.staging.connect() as conn:
        return set(
            conn.execute(
                select(concept_evidence.c.message_id).where(concept_evidence.c.concept_id == cid)
            ).scalars()
        )


def _links(store) -> dict[str, str]:
    with store.staging.connect() as conn:
        return dict(conn.execute(select(mentions.c.mention_id, mentions.c.consolidated_id)).all())


def _replays(store) -> bool:
    with store.staging.connect() as conn:
        diff = action_log.replay_differences(conn)
    return not diff["differing"] and diff["evidence_equal"]


def test_triage_finds_every_category_cites_sources_and_never_mutates(corpus):
    store, ids = corpus
    concepts_before = table_hash(store, [canonical_concepts])
    state_before = content_hash(store)
    report = run_triage(store, EMBEDDER, SMALL)
    assert table_hash(store, [canonical_concepts]) == concepts_before
    assert content_hash(store) == state_before == report.hash_after
    by = {p.category: p for p in report.proposals}
    assert set(by) == {"merge", "split", "macro_concept", "noise"}
    assert by["merge"].concept_ids == [ids["app"], ids["app_duplicate"]]
    assert by["split"].concept_ids == [ids["max"]]
    assert by["noise"].concept_ids == [ids["fri"]]
    assert by["macro_concept"].concept_ids == [ids["garden"]]
    # the two evidence clusters of "Max" are Dana's dog and Omar's coworker
    clusters = by["split"].payload["clusters"]
    assert (
        sorted(c["people"] for c in clusters) == [["dana"], ["omar"]]
        and by["split"].payload["disjoint_people"]
    )
    for p in report.proposals:
        assert 0.0 <= p.score <= 1.0 and p.rationale
        cited = set(p.cited_message_ids)
        assert cited and cited <= set().union(*[_evidence_messages(store, c) for c in p.concept_ids])
    with store.staging.connect() as conn:
        rows = conn.execute(select(lifecycle_proposals)).mappings().all()
    assert len(rows) == 4 and {r["status"] for r in rows} == {"pending_review"}
    manifest = json.loads(open(report.manifest_path).read())
    assert len(manifest["manifest"]["merge_candidates"]) == 1 and manifest["counts"]["noise"] == 1


def test_triage_rerun_is_idempotent_and_stales_what_it_no_longer_proposes(corpus):
    store, _ = corpus
    first = run_triage(store, EMBEDDER, SMALL, run_id="r1")
    table = table_hash(store, [lifecycle_proposals])
    again = run_triage(store, EMBEDDER, SMALL, run_id="r2")
    assert table_hash(store, [lifecycle_proposals]) == table  # same state, same rows: ids are deterministic
    assert again.written["unchanged"] == len(first.proposals) and not again.written["inserted"]
    stricter = run_triage(
        store, EMBEDDER, TriageConfig(macro_spread_ref=3, macro_support_ref=3, noise_min_score=0.95)
    )
    assert stricter.written["staled"] == 1
    with store.staging.connect() as conn:
        statuses = dict(
            conn.execute(select(lifecycle_proposals.c.category, lifecycle_proposals.c.status)).all()
        )
    assert statuses["noise"] == "stale"
    revived = run_triage(store, EMBEDDER, SMALL)
    assert revived.written["revived"] == 1


def test_apply_mutates_with_audit_and_rollback_restores_the_exact_state(corpus):
    store, ids = corpus
    run_triage(store, EMBEDDER, SMALL)
    state0, links0 = content_hash(store), _links(store)
    result = apply_proposals(store, EMBEDDER, RuleBasedChooser(EMBEDDER), dry_run=False, run_id="apply-1")
    body = result.body
    assert body["actions_by_type"] == {
        "archive_concept": 1,
        "create_relation": 1,
        "merge_concepts": 1,
        "split_concept": 1,
    }
    assert body["execution_errors"] == 0 and body["merge_split_traceability"] == 1.0
    assert content_hash(store) != state0
    # merge: evidence and mentions re-pointed; the merged concept is a pointer
    dup = _concept(store, ids["app_duplicate"])
    assert dup["state"] == "merged" and dup["merged_into"] == ids["app"] and dup["evidence_spans"] == []
    app = _concept(store, ids["app"])
    # its confidence combines both; the duplicate's title is the same name (compared normalised): no new alias
    assert app["support_count"] == 2 and app["aliases"] == [] and app["confidence"] > dup["confidence"]
    assert len(_evidence_messages(store, ids["app"])) == 2 and not _evidence_messages(
        store, ids["app_duplicate"]
    )
    links = _links(store)
    assert ids["app_duplicate"] not in links.values()
    # split: Max is kept as `split`; two new concepts hold its four mentions, two each, by person
    assert _concept(store, ids["max"])["state"] == "split"
    children = {c for c in links.values() if c not in ids.values()}
    assert len(children) == 2
    assert sorted(len([m for m, c in links.items() if c == child]) for child in children) == [2, 2]
    # noise archived, hub related
    assert _concept(store, ids["fri"])["state"] == "archived"
    assert {(r["target_id"], r["relation"]) for r in app["relations"]} == {(ids["garden"], "instance_of")}
    # audit: one applied row per action with before/after; the action_log holds the gardener's rows
    audit = list_actions(store, run_id="apply-1")
    assert [a["status"] for a in audit] == ["applied"] * 4
    assert all(
        a["before_state"]["concepts"] and a["after_state"]["concepts"] and a["cited_message_ids"]
        for a in audit
    )
    with store.staging.connect() as conn:
        logged = (
            conn.execute(select(action_log_table.c.action).where(action_log_table.c.actor == "gardener"))
            .scalars()
            .all()
        )
    assert set(logged) == {"merge", "split", "archive", "relate"}
    assert _replays(store)  # the log still reproduces both tables after gardener actions
    with store.staging.connect() as conn:
        statuses = set(conn.execute(select(lifecycle_proposals.c.status)).scalars())
    assert statuses == {"applied"}

    rolled = rollback_run(store, "apply-1")
    assert len(rolled) == 4
    assert content_hash(store) == state0 and _links(store) == links0
    assert _replays(store)  # rollback rows replay too (the split's new concepts are removed again)
    assert {a["status"] for a in list_actions(store, run_id="apply-1")} == {"rolled_back"}
    with pytest.raises(GardenerError, match="only applied actions"):
        rollback_action(store, audit[0]["gardener_action_id"])


def test_dry_run_writes_a_report_and_leaves_the_store_untouched(corpus):
    store, _ = corpus
    run_triage(store, EMBEDDER, SMALL)
    tables = [t for t in staging_metadata.sorted_tables if t is not llm_calls]
    before = table_hash(store, tables)
    dry = apply_proposals(store, EMBEDDER, RuleBasedChooser(EMBEDDER), dry_run=True)
    assert table_hash(store, tables) == before
    assert dry.body["mode"] == "dry_run" and dry.body["quality_after"] is None
    saved = json.loads(dry.json_path.read_text())
    assert [a["status"] for a in saved["actions"]] == ["planned"] * 4
    assert "DRY RUN" in dry.markdown_path.read_text()
    real = apply_proposals(store, EMBEDDER, RuleBasedChooser(EMBEDDER), dry_run=False)
    assert [a["action"] for a in real.body["actions"]] == [a["action"] for a in saved["actions"]]
    assert real.body["concept_delta"] == dry.body["concept_delta"] == -1  # merge −1, split +1, archive −1


def test_uncited_or_out_of_neighbourhood_actions_are_refused(corpus):
    store, ids = corpus
    builder = ActionBuilder(Workspace(store), store.name)
    merge = PlannedAction("merge_concepts", [ids["app"], ids["app_duplicate"]], "same app", [])
    with pytest.raises(RefusedActionError, match="cites no source"):
        builder.build(merge, now=None)
    other = next(iter(_evidence_messages(store, ids["fri"])))
    merge.cited_message_ids = [other]
    with pytest.raises(RefusedActionError, match="not evidence"):
        builder.build(merge, now=None)
    cited = sorted(_evidence_messages(store, ids["max"]))
    bad_split = PlannedAction(
        "split_concept", [ids["max"]], "two Maxes", cited, groups=[EvidenceGroup(["x"])] * 2
    )
    with pytest.raises(RefusedActionError, match="exactly once"):
        builder.build(bad_split, now=None)
    relation = PlannedAction(
        "create_relation",
        [ids["fri"], ids["max"]],
        "no link",
        sorted(_evidence_messages(store, ids["fri"])),
        relation="causes",
    )
    with pytest.raises(RefusedActionError, match="explicit evidence"):
        builder.build(relation, now=None)

    class Careless(Chooser):  # a chooser that forgets citations, like EXP-GARDENER-001's Flash
        name = "careless"

        def choose(self, hood):
            p = hood.proposal
            return Choice(
                "act",
                [
                    PlannedAction(
                        "archive_concept", p["concept_ids"][:1], "looks useless", [], p["proposal_id"]
                    )
                ],
            )

    run_triage(store, EMBEDDER, SMALL)
    state = content_hash(store)
    report = run_refactor(store, Careless(), dry_run=False, run_id="careless")
    assert content_hash(store) == state
    assert report.execution_errors == 4 and report.decisions == {"reject": 4}
    audit = list_actions(store, run_id="careless")
    assert {a["status"] for a in audit} == {"refused"} and all("cites no source" in a["error"] for a in audit)


def test_rollback_is_refused_while_later_actions_depend_on_the_state(corpus):
    store, ids = corpus
    state0 = content_hash(store)
    cited = sorted(_evidence_messages(store, ids["app"]) | _evidence_messages(store, ids["app_duplicate"]))
    merge = apply_action(
        store, PlannedAction("merge_concepts", [ids["app"], ids["app_duplicate"]], "one app", cited)
    )
    refine = apply_action(
        store,
        PlannedAction(
            "refine_concept",
            [ids["app"]],
            "the app's name as Dana writes it",
            cited,
            changes={"title": "Garden Planner App"},
        ),
    )
    assert merge.status == refine.status == "applied"
    assert _concept(store, ids["app"])["revision_count"] == 2
    with pytest.raises(RollbackConflictError, match="roll those back first"):
        rollback_action(store, merge.gardener_action_id)
    rollback_action(store, refine.gardener_action_id)
    rollback_action(store, merge.gardener_action_id)
    assert content_hash(store) == state0 and _replays(store)


def test_ambiguous_decisions_read_the_source_segments(corpus):
    store, ids = corpus
    run_triage(store, EMBEDDER, SMALL)
    # raise the bar so every proposal is ambiguous: the rules must read the source before deciding
    strict = ChooserRules(
        merge_accept=1.01, split_accept=1.01, noise_accept=1.01, macro_accept=1.01, context_min=0.2
    )
    result = apply_proposals(
        store, EMBEDDER, RuleBasedChooser(EMBEDDER, strict), dry_run=False, run_id="careful"
    )
    assert all(p["read_segment_ids"] for p in result.body["proposals"])
    audit = list_actions(store, run_id="careful")
    assert audit and all(a["read_segment_ids"] for a in audit)
    with store.staging.connect() as conn:
        noted = conn.execute(select(gardener_actions.c.rationale)).scalars().all()
    assert any("read the source" in r for r in noted)


def test_applied_actions_become_gardener_action_nodes_on_the_next_graph_load(corpus):
    from memory_core.graph import load_corpus_graph, open_graph

    store, ids = corpus
    run_triage(store, EMBEDDER, SMALL)
    apply_proposals(store, EMBEDDER, RuleBasedChooser(EMBEDDER), dry_run=False, run_id="graphed")
    graph = open_graph(store)
    try:
        _, export = load_corpus_graph(store, graph)
        counts = graph.counts()
        assert counts.nodes["GardenerAction"] == 4 and not export.dangling.get("ACTED_ON")
        acted = {(src, dst) for _, src, _, dst, _ in graph.iter_edges("ACTED_ON")}
        merge = next(a for a in list_actions(store, run_id="graphed") if a["action"] == "merge_concepts")
        assert {
            (merge["gardener_action_id"], ids["app"]),
            (merge["gardener_action_id"], ids["app_duplicate"]),
        } <= acted
        node = graph.node("GardenerAction", merge["gardener_action_id"])
        assert node.props["status"] == "applied" and node.props["action"] == "merge_concepts"
    finally:
        graph.close()


def test_an_applied_proposal_is_not_applied_twice_but_a_rolled_back_one_can_be_redone(corpus):
    store, ids = corpus
    run_triage(store, EMBEDDER, SMALL)
    with store.staging.connect() as conn:
        merge_id = conn.execute(
            select(lifecycle_proposals.c.proposal_id).where(lifecycle_proposals.c.category == "merge")
        ).scalar_one()
    chooser = RuleBasedChooser(EMBEDDER)
    first = run_refactor(store, chooser, dry_run=False, proposal_ids=[merge_id], run_id="once")
    assert first.actions_by_type == {"merge_concepts": 1}
    with pytest.raises(GardenerError, match="already applied"):
        run_refactor(store, chooser, dry_run=False, proposal_ids=[merge_id])
    rollback_run(store, "once")
    again = run_refactor(store, chooser, dry_run=False, proposal_ids=[merge_id], run_id="twice")
    assert again.actions_by_type == {"merge_concepts": 1}
    assert _concept(store, ids["app_duplicate"])["merged_into"] == ids["app"]


def test_hubs_are_measured_by_topics_when_the_topic_stages_have_run(corpus):
    from datetime import datetime

    from memory_core.store.schema import topic_concept_links, topics

    store, ids = corpus
    without = {p.category: p for p in run_triage(store, EMBEDDER, SMALL).proposals}
    assert without["macro_concept"].payload["spread_kind"] == "conversations"
    now = datetime(2024, 5, 2)
    with store.staging.begin() as conn:
        conn.execute(
            topics.insert(),
            [
                {
                    "topic_id": f"t{i}",
                    "label": label,
                    "profile": "",
                    "keywords": [],
                    "centroid": [],
                    "size": 1,
                    "recorded_at": now,
                }
                for i, label in enumerate(["gardening", "pets", "software"])
            ],
        )
        conn.execute(
            topic_concept_links.insert(),
            [
                {"topic_id": f"t{i}", "concept_id": ids["garden"], "weight": 80.0, "cosine": 0.5}
                for i in range(3)
            ]
            + [
                {"topic_id": "t2", "concept_id": ids["app"], "weight": 10.0, "cosine": 0.1}
            ],  # too weak to count
        )
    hub = next(p for p in run_triage(store, EMBEDDER, SMALL).proposals if p.category == "macro_concept")
    assert hub.payload["spread_kind"] == "topics" and hub.payload["spread"] == 3
    assert hub.payload["topics"] == ["gardening", "pets", "software"] and "3 topics" in hub.rationale

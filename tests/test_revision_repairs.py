"""The repair worker's actions on runner-built corpora (offline teacher, hashing embeddings): an edit that
weakens one concept (refine), leaves another's evidence stale in a re-cut segment (reattach) and breaks a
third (archive); the budget leaving queued rows that the check reports; merge; and the explicitly flagged
rebuild, which is listed and rolled back like any other repair."""

from __future__ import annotations

import copy
from collections import Counter
from datetime import datetime

import pytest
from sqlalchemy import insert, select, update

from memory_assets.common import report_figures
from memory_core.concepts.checks import action_log_replays
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.snapshots import Workspace, write_state
from memory_core.concepts.store import read_evidence
from memory_core.ids import stable_uuid
from memory_core.revision import checks as revision_checks
from memory_core.revision.invalidation import supported_confidence
from memory_core.revision.repair import RepairConfig, rollback_repairs, run_repairs
from memory_core.store.db import utcnow
from memory_core.store.schema import canonical_concepts, concept_evidence, repair_queue, segments
from tests.revision_samples import MOVES, REVISION_ASSETS, build, edited, offline_runner, write_chat

BEFORE_REPAIRS = [a for a in REVISION_ASSETS if a != "repairs"]
CATS = "The user often talks about cats"  # a theme with evidence in January (u2) and July (u5)


@pytest.fixture
def runner(home, instance):
    return offline_runner(home, instance)


def _concept(conn, title: str):
    cc = canonical_concepts.c
    return conn.execute(select(canonical_concepts).where(cc.title == title)).mappings().one()


def _id(conn, title: str) -> str:
    return conn.execute(
        select(canonical_concepts.c.concept_id).where(canonical_concepts.c.title == title)
    ).scalar_one()


def _title(conn, concept_id: str) -> str:
    return conn.execute(
        select(canonical_concepts.c.title).where(canonical_concepts.c.concept_id == concept_id)
    ).scalar_one()


def _queue(conn) -> list[dict]:
    return [dict(r) for r in conn.execute(select(repair_queue).order_by(repair_queue.c.repair_id)).mappings()]


def test_an_edit_weakens_staleness_and_breaks_then_the_budget_and_the_worker_repair(home, runner, tmp_path):
    path = write_chat(tmp_path / "moves.jsonl", MOVES)
    assert build(runner, "moves", path).success
    store = home.corpus("moves")
    with store.staging.connect() as conn:
        cats = _concept(conn, CATS)
    assert cats["support_count"] == 3 and cats["first_seen"] == datetime(2024, 1, 10, 9, 1)

    # January's "I have two cats" is edited away; July's two cat spans survive in an untouched conversation
    write_chat(path, edited(MOVES, "u2", "I have two cats", "I have a dog"))
    assert build(runner, "moves", path, selection=BEFORE_REPAIRS).success
    with store.staging.connect() as conn:
        weakened = _concept(conn, CATS)
        civic = _concept(conn, "Honda Civic")
        two_cats = _concept(conn, "The user has two cats")
        evidence = read_evidence(conn, [weakened["concept_id"], civic["concept_id"]])
        queue = _queue(conn)
    survivors = evidence[weakened["concept_id"]]
    assert sorted(r["status"] for r in survivors) == ["active", "active", "rejected"]
    july = datetime(2024, 7, 15, 20, 2)
    assert weakened["trust"] == "weakened" and weakened["support_count"] == 2
    assert weakened["first_seen"] == july and weakened["last_seen"] == july  # freshness from the survivors
    capped = round(supported_confidence(survivors, ConceptPolicy()), 4)
    assert weakened["confidence"] == capped < cats["confidence"]
    # "Honda Civic" still reads the same in the edited message, but its segment was re-cut: stale
    assert civic["trust"] == "stale" and [r["status"] for r in evidence[civic["concept_id"]]] == ["stale"]
    assert two_cats["trust"] == "broken"
    # the edited clause was evidence of the habit and of the "cat" theme hub: both weakened
    with store.staging.connect() as conn:
        queued = sorted((r["trust"], _title(conn, r["concept_id"])) for r in queue)
    assert queued == [
        ("broken", "The user has two cats"), ("stale", "Honda Civic"), ("weakened", CATS), ("weakened", "cat"),
    ]  # fmt: skip
    assert not revision_checks.repair_queue_drained(store).passed

    # a budget of one action: one repair, the rest left queued and reported by the check
    with store.write_lock():
        report = run_repairs(store, RepairConfig(max_actions=1), run_id="budget-1")
    assert (report.queued_before, report.repaired, report.remaining) == (4, 1, 3)
    drained = revision_checks.repair_queue_drained(store)
    assert not drained.passed and drained.figures["repairs_by_status"] == {"done": 1, "queued": 3}
    assert len(drained.figures["remaining"]) == 3

    # the repairs asset works the rest: the stale span re-anchored, the weakened theme refined, the broken one archived
    run = runner.materialize("moves", selection=["repairs"])
    assert run.success
    meta = report_figures(run.result.asset_materializations_for_node("repairs")[0].metadata)
    assert report.actions + Counter(meta["repairs_by_action"]) == {"archive": 1, "reattach": 1, "refine": 2}
    assert meta["queued_before"] == 3 and meta["remaining_queued"] == 0
    assert revision_checks.repair_queue_drained(store).passed
    with store.staging.connect() as conn:
        civic_now, cats_now = (
            _concept_by_id(conn, civic["concept_id"]),
            _concept_by_id(conn, weakened["concept_id"]),
        )
        [civic_row] = read_evidence(conn, [civic["concept_id"]])[civic["concept_id"]]
        current = set(
            conn.execute(select(segments.c.segment_id).where(segments.c.superseded_at.is_(None))).scalars()
        )
        by_action = {r["action"]: r for r in _queue(conn) if r["concept_id"] != _id(conn, "cat")}
    assert civic_row["status"] == "active" and civic_row["segment_id"] in current
    assert civic_now["trust"] == "stable" and civic_now["support_count"] == 1
    # reattached: its evidence active again, it gets back the confidence that evidence supports
    assert civic_now["confidence"] == round(supported_confidence([civic_row], ConceptPolicy()), 4) > 0
    assert (
        cats_now["trust"] == "stable" and cats_now["confidence"] == capped and cats_now["support_count"] == 2
    )
    assert cats_now["title"] == CATS  # a theme keeps its own words, not an episode's
    assert "2 active evidence span(s) survive" in by_action["refine"]["note"]
    assert "still read the same" in by_action["reattach"]["note"]
    assert by_action["refine"]["cited_message_ids"] and action_log_replays(store).passed


def test_a_duplicate_of_an_older_concept_is_merged_into_it_and_rolls_back(home, runner, tmp_path):
    """As if a re-run of the memory loop had made a second concept from the mention 'I live in Seattle now'."""
    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    store = home.corpus("moves")
    with store.staging.connect() as conn:
        seattle = _concept(conn, "The user lives in Seattle")["concept_id"]
    ws = Workspace(store)
    before = ws.snapshot([seattle])
    twin = stable_uuid("concept", "moves", "test-twin", seattle)
    after = copy.deepcopy(before)
    after["concepts"] = {twin: {**before["concepts"][seattle], "concept_id": twin}}
    after["evidence"] = {twin: [{**r, "concept_id": twin} for r in before["evidence"][seattle]]}
    after["mention_links"] = {}
    with store.staging.begin() as conn:
        write_state(conn, {"concepts": {twin: None}, "evidence": {twin: []}, "mention_links": {}}, after)
        conn.execute(insert(repair_queue).values(concept_id=twin, trust="stable", reason="duplicate",
                                                 status="queued", enqueued_at=utcnow()))  # fmt: skip
    with store.write_lock():
        report = run_repairs(store, run_id="test-merge")
    assert report.actions["merge"] == 1 and report.repaired == 1
    with store.staging.connect() as conn:
        merged, head = _concept_by_id(conn, twin), _concept_by_id(conn, seattle)
        [row] = _queue(conn)
        held = conn.execute(
            select(concept_evidence.c.concept_id).where(concept_evidence.c.concept_id == seattle)
        ).all()
    assert merged["state"] == "merged" and merged["merged_into"] == seattle and merged["trust"] == "archived"
    assert head["state"] in ("weak", "active") and len(held) == 1  # the same span is not held twice
    assert row["action"] == "merge" and "residence=seattle" in row["note"] and row["cited_claim_ids"]
    with store.write_lock():
        rollback_repairs(store, run_id="test-merge")
    with store.staging.connect() as conn:
        assert _concept_by_id(conn, twin)["state"] not in ("merged", "archived")


def _concept_by_id(conn, cid: str):
    return (
        conn.execute(select(canonical_concepts).where(canonical_concepts.c.concept_id == cid))
        .mappings()
        .one()
    )


def test_a_flagged_rebuild_is_a_repair_of_its_own_and_rolls_back(home, runner, tmp_path):
    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    store = home.corpus("moves")
    cc = canonical_concepts.c
    with store.staging.begin() as conn:
        seattle = _concept(conn, "The user lives in Seattle")
        # figures that disagree with the evidence (one span, said in July): what a rebuild recomputes
        conn.execute(update(canonical_concepts).where(cc.concept_id == seattle["concept_id"])
                     .values(support_count=5, last_seen=datetime(2025, 1, 1), confidence=0.99))  # fmt: skip
    with store.write_lock():
        assert run_repairs(store, run_id="no-flag").rebuilt == 0  # never without the explicit flag
        report = run_repairs(store, RepairConfig(global_resynthesis=True), run_id="rebuild-1")
    # only the tampered concept: what the memory loop built agrees with its evidence (a restatement in a
    # conversation it had already counted for less is not raised to the noisy-OR of every span; spans
    # listed in another order are the same spans)
    assert report.rebuilt == 1 and report.actions["rebuild"] == 1
    with store.staging.connect() as conn:
        rows = {r["concept_id"]: r for r in _queue(conn) if r["run_id"] == "rebuild-1"}
        rebuilt = _concept_by_id(conn, seattle["concept_id"])
    assert len(rows) == report.rebuilt and {r["action"] for r in rows.values()} == {"rebuild"}
    row = rows[seattle["concept_id"]]
    assert (
        row["status"] == "done"
        and row["before_state"]["concepts"][seattle["concept_id"]]["support_count"] == 5
    )
    assert row["after_state"]["concepts"][seattle["concept_id"]]["support_count"] == 1
    assert rebuilt["support_count"] == 1 and rebuilt["last_seen"] == datetime(2024, 7, 15, 20)
    with store.staging.connect() as conn:
        spans = [dict(r) for r in read_evidence(conn, [seattle["concept_id"]])[seattle["concept_id"]]]
    assert rebuilt["confidence"] == round(supported_confidence(spans, ConceptPolicy()), 4) < 0.99  # capped

    with store.write_lock():
        done = rollback_repairs(store, run_id="rebuild-1")
    assert len(done) == report.rebuilt
    with store.staging.connect() as conn:
        restored = _concept_by_id(conn, seattle["concept_id"])
        statuses = {r["status"] for r in _queue(conn) if r["run_id"] == "rebuild-1"}
    assert (restored["support_count"], restored["last_seen"]) == (5, datetime(2025, 1, 1))
    assert statuses == {"rolled_back"}

"""Concept rows a dead memory-loop run left behind the ActionLog (`concept_rows_behind`): listed in the
transaction that logs their change, rebuilt from the log by whichever concept writer comes next, before it
reads a row — so no writer makes the lag permanent (review s8b, B1)."""

from __future__ import annotations

import contextlib
import logging

import pytest
from sqlalchemy import func, insert, select

from memory_core.concepts import action_log as log
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.rows_behind import mark_rows_behind, repair_rows_behind, rows_behind
from memory_core.concepts.store import read_concepts
from memory_core.embeddings import HashingEmbedder
from memory_core.extraction.current import supersede_other_extractions
from memory_core.extraction.reflective_purge import purge_reflective
from memory_core.gardener import GardenerError, RuleBasedChooser, apply_proposals, rollback_action
from memory_core.gardener.refactor import apply_action, run_refactor
from memory_core.gardener.refactor.actions import PlannedAction
from memory_core.memory_loop import apply as loop_apply
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.revision.fact_states import build_fact_states
from memory_core.revision.invalidation import invalidate_sources
from memory_core.revision.repair import RepairError, rollback_repairs, run_repairs
from memory_core.store.db import utcnow
from memory_core.store.schema import action_log, concept_evidence, mentions
from tests.loop_samples import add_mentions, build_corpus
from tests.test_memory_loop import (
    DOG_MENTIONS,
    DOG_TURNS,
    HASHING,
    _crash_on_batch,
    _embedder,
    _evidence,
    _rows_without_times,
    _transactions,
    _twin,
)

CONFIG = LoopConfig(rules=HASHING.rules, batch_size=1)
DIED_AT = 7  # batches 1-6 written: Max's row holds 4 spans (written at 2 and 4), his evidence 6


def _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder):
    """The dog corpus consolidated with every row waiting for its evidence to double, the run dying in
    batch DIED_AT (the real ActionLog append is back afterwards): Max's row is listed behind its log."""
    dogs = home.corpus("dogs")
    build_corpus(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    monkeypatch.setattr(loop_apply, "ROW_DEFER_MIN_SPANS", 1)
    real = _crash_on_batch(monkeypatch, DIED_AT)
    with pytest.raises(RuntimeError, match="killed"):
        consolidate(dogs, embedder, CONFIG)
    monkeypatch.setattr(log, "append", real)
    assert _spans_and_evidence(dogs)[_max(dogs)] == (4, 6)
    with dogs.staging.connect() as conn:
        assert rows_behind(conn) == [_max(dogs)]
        assert log.replay_differences(conn)["differing"] == [_max(dogs)]
    return dogs


def _max(store) -> str:
    with store.staging.connect() as conn:
        (cid,) = [c for c, k in read_concepts(conn).items() if k.title == "Max"]
    return cid


def _spans_and_evidence(store) -> dict[str, tuple[int, int]]:
    """concept → (spans its row holds, its concept_evidence rows)."""
    with store.staging.connect() as conn:
        held = dict(
            conn.execute(
                select(concept_evidence.c.concept_id, func.count()).group_by(concept_evidence.c.concept_id)
            ).all()
        )
        return {cid: (len(c.evidence_spans), held.get(cid, 0)) for cid, c in read_concepts(conn).items()}


def _assert_caught_up(store) -> None:
    with store.staging.connect() as conn:
        assert rows_behind(conn) == []
        replay = log.replay_differences(conn)
    assert replay["differing"] == [] and replay["evidence_equal"]
    for cid, (spans, rows) in _spans_and_evidence(store).items():
        assert spans == rows, (cid, spans, rows)


def _retire_a_segment_of_max(store) -> None:
    """A teacher switch (the extraction stage) retires the segment of Max's third mention: its mentions
    leave his evidence and his row is trimmed and written whole, with a whole-row `refine` in the log."""
    cid = _max(store)
    with store.staging.begin() as conn:
        segment = conn.execute(
            select(mentions.c.segment_id)
            .where(mentions.c.consolidated_id == cid)
            .order_by(mentions.c.message_created_at)
            .offset(2)
            .limit(1)
        ).scalar_one()
        assert supersede_other_extractions(conn, {segment}, "other-teacher", utcnow())["concepts_trimmed"] == 1


def _refine_max(store) -> None:
    """An operator's gardener action on Max: his row written whole from its snapshot."""
    cid = _max(store)
    with store.staging.connect() as conn:
        cited = conn.execute(
            select(concept_evidence.c.message_id).where(concept_evidence.c.concept_id == cid).limit(1)
        ).scalar_one()
    planned = PlannedAction(
        "refine_concept", [cid], "Max is a beagle", [cited], changes={"description": "Max is Dana's beagle."}
    )
    assert apply_action(store, planned, run_id="operator").status == "applied"


INTERMEDIATE = {"supersede": _retire_a_segment_of_max, "gardener": _refine_max}


@pytest.mark.parametrize("writer", sorted(INTERMEDIATE))
def test_a_writer_between_a_dead_run_and_the_next_does_not_make_the_lag_permanent(
    writer, home, tmp_path, monkeypatch
):
    """A run dies with Max's row behind its log (4 spans, 6 evidence rows); another stage writes Max whole
    before the next consolidation (it would have hidden the lag for good, review s8b B1); the run resumes.
    Every row then holds exactly its evidence, and the tables equal those of a twin that never died: the
    same first six mentions consolidated in one run, the same write, then the other six."""
    embedder = _embedder(home)
    dogs = _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder)
    INTERMEDIATE[writer](dogs)
    with dogs.staging.connect() as conn:
        assert rows_behind(conn) == []  # the writer rebuilt the row before it read it
    consolidate(dogs, embedder, CONFIG)
    _assert_caught_up(dogs)

    twin = _twin(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS[: DIED_AT - 1])
    consolidate(twin, _embedder(twin.home), CONFIG)
    INTERMEDIATE[writer](twin)
    add_mentions(twin, DOG_MENTIONS[DIED_AT - 1 :])
    consolidate(twin, _embedder(twin.home), CONFIG)
    assert _rows_without_times(dogs) == _rows_without_times(twin)
    assert _evidence(dogs) == _evidence(twin)


def _segment_of_max(store) -> set[str]:
    with store.staging.connect() as conn:
        return {
            conn.execute(
                select(mentions.c.segment_id).where(mentions.c.consolidated_id == _max(store)).limit(1)
            ).scalar_one()
        }


def _supersede(store, embedder):
    with store.staging.begin() as conn:
        supersede_other_extractions(conn, _segment_of_max(store), "other-teacher", utcnow())


WRITERS = {
    "consolidate": lambda store, embedder: consolidate(store, embedder, CONFIG),
    "supersede_other_extractions": _supersede,
    "purge_reflective": lambda store, embedder: purge_reflective(store),
    "run_refactor": lambda store, embedder: run_refactor(store, RuleBasedChooser(embedder), dry_run=False),
    "apply_proposals": lambda store, embedder: apply_proposals(
        store, embedder, RuleBasedChooser(embedder), dry_run=False
    ),
    "apply_action": lambda store, embedder: _refine_max(store),
    "rollback_action": lambda store, embedder: rollback_action(store, "no-such-action"),
    "invalidate_sources": lambda store, embedder: invalidate_sources(store, ConceptPolicy(), "r", utcnow()),
    "build_fact_states": lambda store, embedder: build_fact_states(store),
    "run_repairs": lambda store, embedder: run_repairs(store),
    "rollback_repairs": lambda store, embedder: rollback_repairs(store),
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_concept_writer_first_rebuilds_the_rows_a_dead_run_left_behind(writer, home, tmp_path, monkeypatch):
    """Each function that writes concept rows (the extraction stage's teacher switch, the reflective
    purge, the gardener's run, action and rollback, the revision layer's invalidation, fact states, repairs
    and their rollback, the loop itself) starts by rebuilding the listed rows — even one that then finds
    nothing to do or refuses."""
    embedder = _embedder(home)
    dogs = _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder)
    with contextlib.suppress(GardenerError, RepairError):  # the rollbacks find nothing to roll back
        WRITERS[writer](dogs, embedder)
    _assert_caught_up(dogs)


def test_a_gardener_dry_run_writes_nothing_and_leaves_the_rows_for_the_next_writer(home, tmp_path, monkeypatch):
    """A dry run (the gardener_apply job's default) says it writes nothing: it repairs nothing either, and
    the rows a dead run left stay listed for the next writer."""
    from memory_core.concepts.store import content_hash

    embedder = _embedder(home)
    dogs = _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder)
    with dogs.staging.connect() as conn:
        listed = rows_behind(conn)
    before = content_hash(dogs)
    assert listed
    report = run_refactor(dogs, RuleBasedChooser(embedder), dry_run=True)
    apply_proposals(dogs, embedder, RuleBasedChooser(embedder), dry_run=True)
    assert report.hash_before == before and content_hash(dogs) == before
    with dogs.staging.connect() as conn:
        assert rows_behind(conn) == listed


def test_a_row_is_listed_behind_exactly_while_its_log_is_ahead_of_it(home, tmp_path, monkeypatch):
    """A row's id is listed in the transaction that logs a change its row does not get, and unlisted in
    the one that writes the row; the run's end writes every listed row, with no log rows of its own, and
    leaves the list empty; a healthy store has nothing to repair."""
    dogs = home.corpus("dogs")
    build_corpus(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    monkeypatch.setattr(loop_apply, "ROW_DEFER_MIN_SPANS", 1)
    seen, stop = _transactions(dogs.staging)
    try:
        consolidate(dogs, _embedder(home), CONFIG)
    finally:
        stop()
    listed: set[str] = set()
    for t in seen:
        assert set(t["listed"]) <= set(t["acted"]) - set(t["updated"])  # logged here, its row not written
        assert set(t["updated"]) & listed <= set(t["unlisted"])  # a listed row written is unlisted with it
        assert not set(t["unlisted"]) - set(t["updated"])  # unlisted only with its row
        listed = (listed | set(t["listed"])) - set(t["unlisted"])
    assert sum(len(t["listed"]) for t in seen) > 0  # rows did wait
    (end,) = [t for t in seen if t["unlisted"] and not t["acted"]]  # write_lagging
    assert set(end["updated"]) == set(end["unlisted"]) and listed == set()
    assert repair_rows_behind(dogs) == 0
    _assert_caught_up(dogs)


def test_a_row_whose_log_does_not_replay_blocks_no_writer(home, tmp_path, monkeypatch, caplog):
    """A listed concept whose log rows do not replay (a refine of a concept never created) is logged and
    unlisted, its row left as it stands (the log-replay check reports its log); the others are rebuilt and
    the writer goes on."""
    embedder = _embedder(home)
    dogs = _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder)
    ghost = log.ActionRecord.whole_row(
        "refine", "user", "ghost", {"title": "?"}, {"title": "Ghost"}, "", [], "r", utcnow()
    )
    with dogs.staging.begin() as conn:
        conn.execute(insert(action_log), [ghost.row()])
        mark_rows_behind(conn, ["ghost"])
        assert len(rows_behind(conn)) == 2
    with caplog.at_level(logging.WARNING, logger="memory_core.concepts.rows_behind"):
        assert repair_rows_behind(dogs) == 1  # Max
    assert "ghost" in caplog.text and "unknown concept" in caplog.text
    with dogs.staging.connect() as conn:
        assert rows_behind(conn) == []
    assert len(set(_spans_and_evidence(dogs)[_max(dogs)])) == 1
    report = consolidate(dogs, embedder, CONFIG)  # the loop runs on
    assert report.processed == len(DOG_MENTIONS) - DIED_AT + 1


def test_the_consolidation_report_counts_the_rows_it_rebuilt(home, tmp_path, monkeypatch):
    embedder = _embedder(home)
    dogs = _dogs_after_a_dead_run(home, tmp_path, monkeypatch, embedder)
    assert consolidate(dogs, embedder, CONFIG).rows_repaired == 1
    assert consolidate(dogs, embedder, CONFIG).rows_repaired == 0


def _by_title(store) -> dict[str, tuple]:
    """What each concept holds, by title (two corpora's ids differ)."""
    with store.staging.connect() as conn:
        return {
            c.title: (len(c.evidence_spans), c.confidence, c.support_count, c.state, tuple(c.aliases))
            for c in read_concepts(conn).values()
        }


@pytest.mark.postgres
def test_rows_wait_are_listed_and_rebuilt_on_postgres(pg_home, tmp_path, monkeypatch):
    """On Postgres: rows waiting to double (the JSON append cast over several batches), listed; a dead
    run's rows rebuilt by the next run, which ends as a run where no row waits."""
    embedder = HashingEmbedder()
    eager = pg_home.corpus("eager")
    build_corpus(eager, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    consolidate(eager, embedder, CONFIG)  # Max's 12 spans are far below ROW_DEFER_MIN_SPANS: never waits
    dogs = _dogs_after_a_dead_run(pg_home, tmp_path, monkeypatch, embedder)
    assert consolidate(dogs, embedder, CONFIG).rows_repaired == 1
    _assert_caught_up(dogs)
    assert _by_title(dogs) == _by_title(eager)

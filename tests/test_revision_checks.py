"""The revision asset checks seen to fail: each builds a real corpus through the runner (offline teacher,
hashing embeddings), writes one violating state into its store the way a faulty stage would, and asserts the
check turns red with the figure that names it (and that it was green before)."""

from __future__ import annotations

from datetime import datetime

import pytest
from sqlalchemy import insert, select, update

from memory_core.revision import checks as revision_checks
from memory_core.store.db import utcnow
from memory_core.store.schema import canonical_concepts, claims, fact_states, repair_queue
from tests.revision_samples import CONFLICT, MOVES, build, offline_runner, write_chat


@pytest.fixture
def runner(home, instance):
    return offline_runner(home, instance)


@pytest.fixture
def moves(home, runner, tmp_path):
    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    return home.corpus("moves")


def _believed(conn, attribute: str, value: str):
    fs = fact_states.c
    return (
        conn.execute(
            select(fact_states).where(
                fs.attribute == attribute, fs.value == value, fs.superseded_at.is_(None)
            )
        )
        .mappings()
        .one()
    )


def test_an_undisputed_state_left_open_under_its_successor_is_an_overlap(moves):
    assert revision_checks.no_overlapping_valid_intervals(moves).passed
    with moves.staging.begin() as conn:
        portland, seattle = _believed(conn, "residence", "Portland"), _believed(conn, "residence", "Seattle")
        conn.execute(
            update(fact_states)
            .where(fact_states.c.fact_state_id == portland["fact_state_id"])
            .values(valid_until=datetime(2024, 8, 1))  # Seattle opened on 2024-07-15
        )
    result = revision_checks.no_overlapping_valid_intervals(moves)
    assert not result.passed and result.figures["overlaps"] == 1
    assert result.figures["examples"] == [
        {"subject": "user", "slot": "residence", "states": [portland["state_key"], seattle["state_key"]]}
    ]


def test_a_disputed_pair_may_overlap_but_not_a_later_state_it_was_left_open_under(home, runner, tmp_path):
    assert build(runner, "drinks", write_chat(tmp_path / "drinks.jsonl", CONFLICT)).success
    store = home.corpus("drinks")
    result = revision_checks.no_overlapping_valid_intervals(store)
    assert result.passed and result.figures["disputed_states"] == 2  # checked, not skipped
    with store.staging.begin() as conn:
        tea = _believed(conn, "favourite:drink", "green tea")
        coffee = _believed(conn, "favourite:drink", "black coffee")
        assert tea["valid_until"] is None and coffee["valid_until"] is None  # both disputed, both open
        # a later value opened without closing either side of the dispute
        water = {**tea, "fact_state_id": "fs-water", "state_key": "sk-water", "value": "water",
                 "value_norm": "water", "valid_from": datetime(2024, 11, 1), "status": "current",
                 "conflicts_with": None, "recorded_at": utcnow()}  # fmt: skip
        conn.execute(insert(fact_states).values(**water))
    result = revision_checks.no_overlapping_valid_intervals(store)
    assert not result.passed and result.figures["overlaps"] == 2
    assert sorted(e["states"][1] for e in result.figures["examples"]) == ["sk-water", "sk-water"]
    assert {e["states"][0] for e in result.figures["examples"]} == {tea["state_key"], coffee["state_key"]}


def test_a_closed_state_that_cites_no_closer_fails(moves):
    assert revision_checks.closed_states_cite_closer(moves).passed
    with moves.staging.begin() as conn:
        portland = _believed(conn, "residence", "Portland")
        conn.execute(
            update(fact_states)
            .where(fact_states.c.fact_state_id == portland["fact_state_id"])
            .values(closed_by_claim_id=None)
        )
    result = revision_checks.closed_states_cite_closer(moves)
    assert not result.passed and result.figures["uncited"] == 1
    assert result.figures["closed_states"] >= 5
    assert result.figures["examples"] == [
        {"state_key": portland["state_key"], "slot": "residence", "status": "superseded"}
    ]


def test_a_superseded_state_naming_no_existing_successor_fails(moves):
    with moves.staging.begin() as conn:
        portland = _believed(conn, "residence", "Portland")
        conn.execute(
            update(fact_states)
            .where(fact_states.c.fact_state_id == portland["fact_state_id"])
            .values(superseded_by="no-such-state")
        )
    result = revision_checks.closed_states_cite_closer(moves)
    assert not result.passed and result.figures["uncited"] == 1


def test_a_concept_more_confident_than_its_surviving_evidence_fails(moves):
    assert revision_checks.confidence_within_evidence(moves).passed
    cc = canonical_concepts.c
    with moves.staging.begin() as conn:
        seattle = conn.execute(
            select(cc.concept_id, cc.confidence).where(cc.title == "The user lives in Seattle")
        ).one()
        conn.execute(
            update(canonical_concepts).where(cc.concept_id == seattle.concept_id).values(confidence=0.95)
        )
    result = revision_checks.confidence_within_evidence(moves)
    assert not result.passed and result.figures["above_evidence"] == 1
    assert result.figures["examples"] == [
        {"concept_id": seattle.concept_id, "confidence": 0.95, "supported": seattle.confidence}
    ]


def test_a_claim_whose_span_no_longer_reads_in_its_message_fails(moves):
    assert revision_checks.claims_grounded(moves).passed
    with moves.staging.begin() as conn:
        seattle = conn.execute(select(claims.c.claim_id).where(claims.c.value == "Seattle")).scalar_one()
        conn.execute(
            update(claims).where(claims.c.claim_id == seattle).values(text="I live in Vancouver now")
        )
    result = revision_checks.claims_grounded(moves)
    assert not result.passed and result.figures["ungrounded"] == 1
    assert result.figures["examples"] == [seattle]
    assert result.figures["claims_by_status"] == {"active": 18}


def test_an_escalated_repair_that_says_not_why_fails(moves):
    assert revision_checks.repair_queue_drained(moves).passed
    cc = canonical_concepts.c
    with moves.staging.begin() as conn:
        cid = conn.execute(select(cc.concept_id).where(cc.title == "The user lives in Seattle")).scalar_one()
        conn.execute(insert(repair_queue).values(concept_id=cid, trust="disputed", reason="disputed",
                                                 status="escalated", enqueued_at=utcnow(), note=""))  # fmt: skip
    result = revision_checks.repair_queue_drained(moves)
    assert not result.passed and result.figures["unexplained"] == 1
    assert result.figures["repairs_by_status"] == {"escalated": 1}

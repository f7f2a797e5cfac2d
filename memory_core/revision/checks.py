"""Contracts of the revision stages, evaluated on what is stored (the asset checks wrap these)."""

from __future__ import annotations

from collections import defaultdict

from sqlalchemy import func, select

from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.store import read_evidence
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.reports import CheckResult
from memory_core.revision.grounding import current_segment_ids, grounding, source_messages
from memory_core.revision.invalidation import supported_confidence
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, claims, fact_states, repair_queue

_EXAMPLES = 10
_EPSILON = 1e-4


def _believed_states(store: CorpusStore) -> list[dict]:
    with store.staging.connect() as conn:
        return [
            dict(r)
            for r in conn.execute(
                select(fact_states).where(
                    fact_states.c.superseded_at.is_(None), fact_states.c.state_key.is_not(None)
                )
            ).mappings()
        ]


def _overlap(a: dict, b: dict) -> bool:
    """Whether two valid-time intervals [valid_from, valid_until) share an instant (open = still true)."""
    a_until, b_until = a["valid_until"], b["valid_until"]
    return (b_until is None or a["valid_from"] < b_until) and (a_until is None or b["valid_from"] < a_until)


def _disputed_pair(a: dict, b: dict) -> bool:
    """Two states disputed with each other: said at the same time, they overlap by definition."""
    return b["state_key"] in (a["conflicts_with"] or []) or a["state_key"] in (b["conflicts_with"] or [])


def no_overlapping_valid_intervals(store: CorpusStore) -> CheckResult:
    """Per (subject, slot key) the states memory believes never overlap in valid time: each closes before
    the next opens, at most one is open. The one exemption is a pair disputed with each other (same-time
    values, each naming the other in `conflicts_with`); a disputed state is still checked against every
    state it is not disputed with, so a dispute left open under a later value is an overlap."""
    by_group: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for s in _believed_states(store):
        by_group[(s["subject"], s["attribute"])].append(s)
    overlaps, disputed = [], 0
    for (subject, attribute), states in by_group.items():
        states.sort(key=lambda s: (s["valid_from"], s["valid_until"] or s["valid_from"]))
        disputed += sum(1 for s in states if s["conflicts_with"])
        for i, a in enumerate(states):
            for b in states[i + 1 :]:
                if _overlap(a, b) and not _disputed_pair(a, b):
                    overlaps.append(
                        {"subject": subject, "slot": attribute, "states": [a["state_key"], b["state_key"]]}
                    )
    return CheckResult(
        not overlaps,
        {
            "histories": len(by_group),
            "disputed_states": disputed,
            "overlaps": len(overlaps),
            "examples": overlaps[:_EXAMPLES],
        },
    )


def closed_states_cite_closer(store: CorpusStore) -> CheckResult:
    """Every believed state with a `valid_until` cites the claim and message that closed it, and a
    superseded one names an existing state that replaced it."""
    states = _believed_states(store)
    keys = {s["state_key"] for s in states}
    with store.staging.connect() as conn:
        claim_ids = set(conn.execute(select(claims.c.claim_id)).scalars())
    bad = []
    closed = 0
    for s in states:
        if s["valid_until"] is None:
            continue
        closed += 1
        ok = s["closed_by_claim_id"] in claim_ids and bool(s["closed_by_message_id"])
        if s["status"] == "superseded":
            ok = ok and s["superseded_by"] in keys
        if not ok:
            bad.append({"state_key": s["state_key"], "slot": s["attribute"], "status": s["status"]})
    return CheckResult(not bad, {"closed_states": closed, "uncited": len(bad), "examples": bad[:_EXAMPLES]})


def confidence_within_evidence(store: CorpusStore, policy: ConceptPolicy | None = None) -> CheckResult:
    """No live concept's confidence is above what its surviving active evidence supports (the noisy-OR of
    that evidence, as the memory loop builds confidence)."""
    policy = policy or ConceptPolicy()
    with store.staging.connect() as conn:
        live = dict(
            conn.execute(
                select(canonical_concepts.c.concept_id, canonical_concepts.c.confidence).where(
                    canonical_concepts.c.state.in_(LIVE_STATES)
                )
            ).all()
        )
        evidence = read_evidence(conn, list(live))
    above = []
    for cid, confidence in live.items():
        cap = supported_confidence(evidence.get(cid, []), policy)
        if confidence > cap + _EPSILON:
            above.append({"concept_id": cid, "confidence": round(confidence, 4), "supported": round(cap, 4)})
    above.sort(key=lambda r: r["supported"] - r["confidence"])
    return CheckResult(
        not above, {"concepts": len(live), "above_evidence": len(above), "examples": above[:_EXAMPLES]}
    )


def claims_grounded(store: CorpusStore) -> CheckResult:
    """Every active or disputed claim reads, verbatim, the text of its message at its span, in a current
    segment (stale / rejected / archived ones are kept with their reasons)."""
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(claims.c.claim_id, claims.c.message_id, claims.c.segment_id, claims.c.span_start,
                   claims.c.span_end, claims.c.text).where(claims.c.state.in_(("active", "disputed")))
        ).all()  # fmt: skip
        by_status = dict(conn.execute(select(claims.c.state, func.count()).group_by(claims.c.state)).all())
    sources = source_messages(store, {r.message_id for r in rows})
    current = current_segment_ids(store)
    bad = [
        r.claim_id
        for r in rows
        if grounding(sources.get(r.message_id), r.span_start, r.span_end, r.text, r.segment_id in current)[0]
        != "active"
    ]
    return CheckResult(
        not bad, {"claims_by_status": by_status, "ungrounded": len(bad), "examples": bad[:_EXAMPLES]}
    )


def repair_queue_drained(store: CorpusStore) -> CheckResult:
    """The repair queue is empty, or what is left is reported: every escalated row says why, and the rows
    still queued (the run's budget spent) are listed."""
    rq = repair_queue.c
    with store.staging.connect() as conn:
        by_status = dict(conn.execute(select(rq.status, func.count()).group_by(rq.status)).all())
        left = [
            {"repair_id": r.repair_id, "concept_id": r.concept_id, "trust": r.trust, "note": r.note or ""}
            for r in conn.execute(
                select(rq.repair_id, rq.concept_id, rq.trust, rq.note).where(
                    rq.status.in_(("queued", "escalated"))
                )
            )
        ]
    unexplained = [r for r in left if not r["note"]]
    return CheckResult(
        by_status.get("queued", 0) == 0 and not unexplained,
        {"repairs_by_status": by_status, "remaining": left[: _EXAMPLES * 2], "unexplained": len(unexplained)},
    )

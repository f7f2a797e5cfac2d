"""Invalidation: a changed or removed source message weakens what was built on it (docs/architecture.md §4.11).

Source → evidence: every `concept_evidence` row read in a segment that was re-cut is re-grounded against its
message as it reads now (`grounding`): `rejected` when the message was edited at the span or removed,
`stale` when the text still reads the same (the segment around it changed). Evidence never comes back to
`active` here: re-attaching stale evidence to the current segment is the repair worker's.

Evidence → concept: a concept whose evidence changed gets its support counted again (the surviving active
evidence), its confidence capped by what that evidence supports (the noisy-OR of the survivors, as the
memory loop built it), its freshness (first/last seen) from the survivors, and its trust from what is left:
no active evidence and something rejected → `broken`; no active evidence, only stale → `stale`; some
evidence lost but some active → `weakened`. Each change is one `invalidate` row of the append-only action
log (prior and new state, with the evidence rows, so replay and rollback keep working), and every concept
that is weakened / disputed / broken / stale enters `repair_queue` once (not again while queued).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, select

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import EVIDENCE_ROWS
from memory_core.concepts.policy import ConceptPolicy, noisy_or, state_for
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.store import read_concepts, read_evidence, replace_evidence, update_concepts
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.reports import Figures
from memory_core.revision.grounding import grounding, source_messages
from memory_core.store.db import CorpusStore
from memory_core.store.schema import claims, concept_evidence, repair_queue, segments

ACTOR = "revision"
REPAIR_TRUST = ("weakened", "disputed", "broken", "stale")
_LOST = ("stale", "rejected")


@dataclass
class InvalidationReport:
    evidence_checked: int = 0
    evidence_changed: Counter = field(default_factory=Counter)  # new status → rows
    concepts_invalidated: int = 0
    trust_after: Counter = field(default_factory=Counter)
    confidence_capped: int = 0
    repairs_enqueued: int = 0
    reasons: Counter = field(default_factory=Counter)

    def as_metadata(self) -> Figures:
        return {
            "evidence_rechecked": self.evidence_checked,
            "evidence_invalidated": dict(self.evidence_changed),
            "concepts_invalidated": self.concepts_invalidated,
            "invalidated_trust": dict(self.trust_after),
            "confidence_capped": self.confidence_capped,
            "repairs_enqueued": self.repairs_enqueued,
            "invalidation_reasons": dict(self.reasons.most_common(10)),
        }


def supported_confidence(evidence: list[dict], policy: ConceptPolicy) -> float:
    """What the active evidence supports: the noisy-OR of its confidences, as the memory loop builds it."""
    confidence = 0.0
    for row in evidence:
        if row["status"] == "active":
            confidence = noisy_or(confidence, row["confidence"], policy.evidence_weight)
    return confidence


def trust_for(evidence: list[dict], current: str) -> str:
    """Trust from what is left of the evidence (unchanged when nothing was lost)."""
    statuses = Counter(r["status"] for r in evidence)
    if not any(statuses[s] for s in _LOST):
        return current
    if statuses["active"]:
        return "weakened"
    return "broken" if statuses["rejected"] else "stale"


def revise_concept(
    concept: ConceptHypothesis, evidence: list[dict], times: dict[str, datetime], policy: ConceptPolicy
) -> dict:
    """The fields of `concept` that its (re-graded) evidence changes: support, capped confidence, trust,
    state and freshness."""
    active = [r for r in evidence if r["status"] == "active"]
    confidence = min(concept.confidence, round(supported_confidence(evidence, policy), 4))
    updates: dict = {
        "support_count": len(active),
        "confidence": confidence,
        "trust": trust_for(evidence, concept.trust),
    }
    if concept.live:
        updates["state"] = state_for(confidence, policy.active_confidence)
    seen = [times[r["message_id"]] for r in active if r["message_id"] in times]
    if seen:
        updates["first_seen"], updates["last_seen"] = min(seen), max(seen)
    return {k: v for k, v in updates.items() if getattr(concept, k) != v}


def concepts_in_dispute(conn) -> set[str]:
    """Concepts a disputed claim touches: the one it is attributed to (a claim read off a message beside any
    mention is its concept's too) and those holding its mention as active evidence. fact_states disputes
    them; the repair worker does not settle them."""
    touched, mention_ids = set(), set()
    for concept_id, mention_id in conn.execute(
        select(claims.c.concept_id, claims.c.mention_id).where(claims.c.state == "disputed")
    ):
        touched |= {concept_id} if concept_id else set()
        mention_ids |= {mention_id} if mention_id else set()
    if mention_ids:
        ce = concept_evidence.c
        touched |= set(
            conn.execute(
                select(ce.concept_id).where(ce.mention_id.in_(sorted(mention_ids)), ce.status == "active")
            ).scalars()
        )
    return touched


def enqueue_repairs(conn, concepts: list[ConceptHypothesis], reasons: dict[str, str], now: datetime) -> int:
    """A queued row for each concept in a repair trust that has none queued yet."""
    wanted = [c for c in concepts if c.trust in REPAIR_TRUST]
    if not wanted:
        return 0
    queued = set(
        conn.execute(
            select(repair_queue.c.concept_id).where(
                repair_queue.c.status == "queued",
                repair_queue.c.concept_id.in_([c.concept_id for c in wanted]),
            )
        ).scalars()
    )
    rows = [
        dict(
            concept_id=c.concept_id,
            trust=c.trust,
            reason=reasons.get(c.concept_id, c.trust),
            status="queued",
            enqueued_at=now,
        )
        for c in wanted
        if c.concept_id not in queued
    ]
    if rows:
        conn.execute(insert(repair_queue), rows)
    return len(rows)


def _rationale(changes: list[tuple[dict, str, str]], before: float, after: float) -> str:
    parts = Counter(f"{status}: {reason}" for _row, status, reason in changes)
    text = "; ".join(f"{n} evidence span(s) {what}" for what, n in parts.most_common())
    if after < before:
        text += f"; confidence {before:.3f} → {after:.3f}, capped by the surviving active evidence"
    return "source changed — " + text


def invalidate_sources(
    store: CorpusStore, policy: ConceptPolicy, run_id: str, now: datetime
) -> InvalidationReport:
    """Re-ground the evidence read in re-cut segments and revise the concepts it supports. The caller holds
    the corpus write lock."""
    repair_rows_behind(store)  # revised as the rows stand after a dead consolidation's last batch
    report = InvalidationReport()
    ce, s = concept_evidence.c, segments.c
    with store.staging.connect() as conn:
        rows = [
            dict(r)
            for r in conn.execute(
                select(concept_evidence)
                .join(segments, s.segment_id == ce.segment_id)
                .where(s.superseded_at.is_not(None), ce.status.in_(("active", "stale", "disputed")))
            ).mappings()
        ]
    report.evidence_checked = len(rows)
    if not rows:
        return report
    sources = source_messages(store, {r["message_id"] for r in rows})
    changed: dict[str, list[tuple[dict, str, str]]] = defaultdict(list)
    for r in rows:
        status, reason = grounding(
            sources.get(r["message_id"]), r["span_start"], r["span_end"], r["text"], False
        )
        if status != r["status"]:
            changed[r["concept_id"]].append((r, status, reason))
            report.evidence_changed[status] += 1
            report.reasons[reason.split(":")[0]] += 1
    if not changed:
        return report
    ids = sorted(changed)
    with store.staging.connect() as conn:
        concepts = read_concepts(conn, ids)
        evidence = read_evidence(conn, ids)
    cited = {r["message_id"] for rows_of in evidence.values() for r in rows_of}
    times = {m: src.created_at for m, src in source_messages(store, cited).items()}
    records, revised, reasons = [], [], {}
    for cid in ids:
        concept = concepts.get(cid)
        if concept is None:
            continue
        new_status = {r["mention_id"]: status for r, status, _ in changed[cid]}
        before_rows = evidence[cid]
        after_rows = [{**r, "status": new_status.get(r["mention_id"], r["status"])} for r in before_rows]
        updates = revise_concept(concept, after_rows, times, policy)
        prior = {k: getattr(concept, k) for k in updates} | {
            "recorded_at": concept.recorded_at,
            EVIDENCE_ROWS: before_rows,
        }
        before_confidence = concept.confidence
        for key, value in updates.items():
            setattr(concept, key, value)
        concept.recorded_at = now
        new = {**updates, "recorded_at": now, EVIDENCE_ROWS: after_rows}
        report.confidence_capped += int(concept.confidence < before_confidence)
        rationale = _rationale(changed[cid], before_confidence, concept.confidence)
        reasons[cid] = rationale[:500]
        records.append(
            log.ActionRecord(
                action="invalidate",
                actor=ACTOR,
                concept_id=cid,
                mention_id=None,
                scores={
                    "evidence": dict(Counter(r["status"] for r in after_rows)),
                    "supported_confidence": round(supported_confidence(after_rows, policy), 4),
                },
                rationale=rationale,
                cited_message_ids=sorted({r["message_id"] for r, _, _ in changed[cid]}),
                prior_state=prior,
                new_state=new,
                run_id=run_id,
                recorded_at=now,
            )
        )
        evidence[cid] = after_rows
        revised.append(concept)
        report.trust_after[concept.trust] += 1
    with store.staging.begin() as conn:
        update_concepts(conn, revised)
        for concept in revised:
            replace_evidence(conn, concept.concept_id, evidence[concept.concept_id])
        log.append(conn, records)
        report.repairs_enqueued = enqueue_repairs(conn, revised, reasons, now)
    report.concepts_invalidated = len(revised)
    return report

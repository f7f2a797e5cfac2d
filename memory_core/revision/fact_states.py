"""The fact-states stage: per (subject, slot key) the bi-temporal history of FactStates, kept as versions.

Every (subject, slot key) with active or disputed claims gets its history recomputed
(`memory_core.revision.history`) — contradiction is only ever looked for inside one subject's one slot key,
never across the memory. What is stored is versioned in system time: a state whose interval, status or
evidence changed gets a new row (recorded now) and its previous row `superseded_at` now, so `believed_at`
queries read `recorded_at <= t < superseded_at` and see what memory held then; a state no longer in any
history (its claims were invalidated) is superseded the same way. Nothing is deleted.

The claims follow their states (`disputed` in a disputed state, back to `active` once settled). A dispute
between claims of two concepts relates them `conflicts_with` and marks both `disputed` (an action-log
`dispute` row each, replayable); a concept holding both sides of a dispute is `disputed` too; either way
the concept enters the repair queue.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, insert, select, update

from memory_core.concepts import action_log as log
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.store import read_concepts, update_concepts
from memory_core.ids import stable_uuid
from memory_core.ontology.claims import HISTORY_STATUSES
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.reports import Figures
from memory_core.revision.adjudication import AdjudicationFailed, FactAdjudicator
from memory_core.revision.grounding import source_messages
from memory_core.revision.history import (
    CHANGE_CUE,
    ClaimView,
    StateDraft,
    Verdict,
    build_history,
    rule_verdict,
)
from memory_core.revision.invalidation import ACTOR, concepts_in_dispute, enqueue_repairs
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import canonical_concepts, claims, fact_states

RULE_ONLY = "rules"
_CUE_CONTEXT = 80  # characters before a claim's span read for a change cue ("We finally moved! I live ...")


@dataclass
class FactConfig:
    conflict_window_hours: float = (
        24.0  # different values said closer than this without a change cue conflict
    )

    @property
    def window(self) -> timedelta:
        return timedelta(hours=self.conflict_window_hours)


@dataclass
class FactStatesReport:
    adjudicator: str = RULE_ONLY
    groups: int = 0
    states: Counter = field(default_factory=Counter)  # believed now, by status
    supersessions: int = 0
    conflicts: int = 0
    ended: int = 0
    lanes: int = 0
    versions_new: int = 0
    versions_retired: int = 0
    out_of_order_claims: int = 0
    claims_disputed: int = 0
    concepts_disputed: int = 0
    repairs_enqueued: int = 0
    undecided: int = 0  # pairs the rules could not settle: what an adjudicator is asked (its calls, uncached)
    adjudications: Counter = field(default_factory=Counter)  # decision → n (failed: the fallback decided)
    llm_calls: int = 0
    seconds: float = 0.0

    def as_metadata(self) -> Figures:
        return {
            "fact_groups": self.groups,
            "fact_states": sum(self.states.values()),
            "fact_states_by_status": dict(self.states),
            "supersessions": self.supersessions,
            "conflicts": self.conflicts,
            "ended": self.ended,
            "unrelated_lanes": self.lanes,
            "versions_new": self.versions_new,
            "versions_retired": self.versions_retired,
            "out_of_order_claims": self.out_of_order_claims,
            "claims_disputed": self.claims_disputed,
            "concepts_disputed": self.concepts_disputed,
            "repairs_enqueued": self.repairs_enqueued,
            "rules_undecided": self.undecided,
            "adjudicator": self.adjudicator,
            "adjudications": dict(self.adjudications),
            "llm_calls": self.llm_calls,
            "seconds": round(self.seconds, 3),
        }


def _claim_views(store: CorpusStore) -> tuple[dict[tuple[str, str], list[ClaimView]], dict[str, dict]]:
    c = claims.c
    with store.staging.connect() as conn:
        rows = [dict(r) for r in conn.execute(select(claims).where(c.state.in_(HISTORY_STATUSES))).mappings()]
    texts = source_messages(store, {r["message_id"] for r in rows})
    groups: dict[tuple[str, str], list[ClaimView]] = defaultdict(list)
    for r in rows:
        source = texts.get(r["message_id"])
        before = source.text[max(0, r["span_start"] - _CUE_CONTEXT) : r["span_end"]] if source else r["text"]
        groups[(r["subject"], r["attribute"])].append(
            ClaimView(
                claim_id=r["claim_id"],
                message_id=r["message_id"],
                concept_id=r["concept_id"] or "",
                subject=r["subject"],
                subject_label=r["subject_label"] or r["subject"],
                slot=r["slot"],
                attribute=r["attribute"],
                value=r["value"],
                value_norm=r["value_norm"],
                polarity=r["polarity"],
                valid_from=r["valid_from"],
                spoken_at=r["spoken_at"],
                text=r["text"],
                span_start=r["span_start"] or 0,
                change_cue=bool(CHANGE_CUE.search(before)),
            )
        )
    return groups, {r["claim_id"]: r for r in rows}


def _stored_content(row: dict) -> tuple:
    return (
        row["attribute"],
        row["value"],
        row["value_norm"],
        row["valid_from"],
        row["valid_until"],
        row["status"],
        tuple(row["claim_ids"] or ()),
        row["superseded_by"],
        row["closed_by_claim_id"],
        tuple(sorted(row["conflicts_with"] or ())),
        row["concept_id"],
        row["decided_by"],
    )


def _version_row(s: StateDraft, version: int, now: datetime) -> dict:
    return dict(
        fact_state_id=stable_uuid("fact_state_version", s.state_key, version),
        concept_id=s.concept_id,
        attribute=s.attribute,
        value=s.value,
        valid_from=s.valid_from,
        valid_until=s.valid_until,
        recorded_at=now,
        superseded_at=None,
        evidence_message_id=s.evidence_message_id,
        state_key=s.state_key,
        subject=s.subject,
        subject_label=s.subject_label,
        slot=s.slot,
        value_norm=s.value_norm,
        status=s.status,
        claim_ids=[c.claim_id for c in s.claims],
        superseded_by=s.superseded_by,
        closed_by_claim_id=s.closed_by.claim_id if s.closed_by else None,
        closed_by_message_id=s.closed_by.message_id if s.closed_by else None,
        conflicts_with=sorted(s.conflicts_with),
        decided_by=s.decided_by,
        rationale=s.rationale,
    )


class _Decider:
    """Rules first; the adjudicator for what they cannot settle; conflict as the fallback."""

    def __init__(self, config: FactConfig, adjudicator: FactAdjudicator | None, report: FactStatesReport):
        self.config = config
        self.adjudicator = adjudicator
        self.report = report

    def __call__(self, open_states: list[StateDraft], claim: ClaimView) -> Verdict:
        verdict = rule_verdict(open_states, claim, self.config.window)
        if verdict is not None:
            return verdict
        self.report.undecided += 1
        if self.adjudicator is not None:
            try:
                verdict = self.adjudicator.adjudicate(open_states, claim)
                self.report.adjudications[verdict.decision] += 1
                return verdict
            except AdjudicationFailed as exc:
                self.report.adjudications["failed"] += 1
                return Verdict(
                    "conflict", "rule", f"different values at the same time; adjudication failed: {exc}"
                )
        return Verdict("conflict", "rule", "different values said at about the same time, no change said")


def _out_of_order(views: list[ClaimView], recorded: dict[str, dict]) -> int:
    """Claims recorded after a claim of the same history that is later in valid time."""
    n = 0
    for c in views:
        mine = recorded[c.claim_id]["recorded_at"]
        if any(recorded[o.claim_id]["recorded_at"] < mine and o.valid_from > c.valid_from for o in views):
            n += 1
    return n


def build_fact_states(
    store: CorpusStore,
    config: FactConfig | None = None,
    adjudicator: FactAdjudicator | None = None,
    run_id: str = "",
    now: datetime | None = None,
) -> FactStatesReport:
    """Recompute every history and store what changed as new versions. The caller holds the write lock."""
    repair_rows_behind(store)  # disputed concepts are written whole: first as the log has them
    started = time.perf_counter()
    config = config or FactConfig()
    now = now or utcnow()
    report = FactStatesReport(adjudicator=adjudicator.name if adjudicator else RULE_ONLY)
    decide = _Decider(config, adjudicator, report)
    groups, recorded = _claim_views(store)
    desired: dict[str, StateDraft] = {}
    for views in groups.values():
        report.out_of_order_claims += _out_of_order(views, recorded)
        for s in build_history(views, decide, config.window):
            desired[s.state_key] = s
    report.groups = len(groups)
    with store.staging.connect() as conn:
        believed = {
            r["state_key"]: dict(r)
            for r in conn.execute(select(fact_states).where(fact_states.c.superseded_at.is_(None))).mappings()
        }
        versions = dict(
            conn.execute(
                select(fact_states.c.state_key, func.count()).group_by(fact_states.c.state_key)
            ).all()
        )
    retire = [r["fact_state_id"] for k, r in believed.items() if k not in desired]
    inserts = []
    for key, s in desired.items():
        old = believed.get(key)
        if old is not None and _stored_content(old) == s.content():
            continue
        if old is not None:
            retire.append(old["fact_state_id"])
        inserts.append(_version_row(s, versions.get(key, 0), now))
    report.versions_new, report.versions_retired = len(inserts), len(retire)
    for s in desired.values():
        report.states[s.status] += 1
        report.supersessions += int(s.status == "superseded")
        report.ended += int(s.status == "ended")
        report.lanes += int("/" in s.attribute)
    report.conflicts = sum(1 for s in desired.values() if s.status == "disputed")
    with store.staging.begin() as conn:
        if retire:
            conn.execute(
                update(fact_states)
                .where(fact_states.c.fact_state_id == bindparam("b_id"))
                .values(superseded_at=now),
                [{"b_id": i} for i in retire],
            )
        if inserts:
            conn.execute(insert(fact_states), inserts)
        _claim_statuses(conn, desired, recorded, now, report)
        _dispute_concepts(conn, desired, run_id, now, report)
    if adjudicator is not None:
        report.llm_calls = getattr(adjudicator, "calls", 0)
    report.seconds = time.perf_counter() - started
    return report


def _claim_statuses(conn, desired: dict[str, StateDraft], recorded: dict[str, dict], now, report) -> None:
    disputed = {c.claim_id for s in desired.values() if s.status == "disputed" for c in s.claims}
    changes = []
    for claim_id, row in recorded.items():
        want = "disputed" if claim_id in disputed else "active"
        if row["state"] != want:
            reason = (
                "its fact conflicts with another value said at the same time" if want == "disputed" else ""
            )
            changes.append({"b_id": claim_id, "b_state": want, "b_reason": reason, "b_at": now})
    if changes:
        conn.execute(
            update(claims)
            .where(claims.c.claim_id == bindparam("b_id"))
            .values(
                state=bindparam("b_state"),
                state_reason=bindparam("b_reason"),
                state_changed_at=bindparam("b_at"),
            ),
            changes,
        )
    report.claims_disputed = len(disputed)


def _queue_settled_disputes(conn, opponents: set[str], now: datetime, report) -> None:
    """A repair for each live concept still marked disputed that no disputed claim touches any more (its
    conflict was superseded or edited away): the repair worker settles it. One a disputed claim still
    touches is left: the worker would not settle it either, and queueing it every run would be a write
    every run."""
    touched = opponents | concepts_in_dispute(conn)
    cc = canonical_concepts.c
    stale = [
        cid
        for cid in conn.execute(
            select(cc.concept_id).where(cc.trust == "disputed", cc.state.in_(LIVE_STATES))
        ).scalars()
        if cid not in touched
    ]
    if stale:
        settled = list(read_concepts(conn, stale).values())
        reasons = {c.concept_id: "disputed no more: no claim of it is in a disputed state" for c in settled}
        report.repairs_enqueued += enqueue_repairs(conn, settled, reasons, now)


def _dispute_concepts(conn, desired: dict[str, StateDraft], run_id: str, now: datetime, report) -> None:
    """conflicts_with between the concepts of disputed states, their trust `disputed`, and a repair each."""
    opponents: dict[str, set[str]] = defaultdict(set)
    cited: dict[str, set[str]] = defaultdict(set)
    for s in desired.values():
        if s.status != "disputed":
            continue
        concepts_here = {c.concept_id for c in s.claims if c.concept_id}
        for other_key in s.conflicts_with:
            other = desired.get(other_key)
            if other is None:
                continue
            there = {c.concept_id for c in other.claims if c.concept_id}
            for cid in concepts_here:
                opponents[cid] |= there  # itself too when one concept holds both sides
                cited[cid] |= {c.message_id for c in s.claims + other.claims}
    _queue_settled_disputes(conn, set(opponents), now, report)
    if not opponents:
        return
    concepts = read_concepts(conn, list(opponents))
    records, changed = [], []
    for cid in sorted(opponents):
        concept = concepts.get(cid)
        if concept is None or not concept.live:
            continue
        relations = {(r.target_id, r.relation): r.confidence for r in concept.relations}
        for target in sorted(opponents[cid] - {cid}):
            relations.setdefault((target, "conflicts_with"), 0.8)
        new_relations = [
            {"target_id": t, "relation": rel, "confidence": c} for (t, rel), c in sorted(relations.items())
        ]
        if concept.trust == "disputed" and len(new_relations) == len(concept.relations):
            continue
        prior = {
            "relations": [r.model_dump() for r in concept.relations],
            "trust": concept.trust,
            "recorded_at": concept.recorded_at,
        }
        concept.relations = new_relations
        concept.trust = "disputed"
        concept.recorded_at = now
        patch = {"relations": new_relations, "trust": "disputed", "recorded_at": now}
        others = sorted(opponents[cid] - {cid})
        records.append(
            log.ActionRecord(
                action="dispute",
                actor=ACTOR,
                concept_id=cid,
                mention_id=None,
                scores={"conflicts_with": others},
                rationale=(
                    "claims of this concept conflict with claims said at the same time"
                    + (f" by concept(s) {', '.join(others)}" if others else " within it")
                ),
                cited_message_ids=sorted(cited[cid]),
                prior_state=prior,
                new_state=patch,
                run_id=run_id,
                recorded_at=now,
            )
        )
        changed.append(concept)
    update_concepts(conn, changed)
    log.append(conn, records)
    reasons = {
        c.concept_id: "disputed: its claims conflict with others said at the same time" for c in changed
    }
    report.repairs_enqueued += enqueue_repairs(conn, changed, reasons, now)
    report.concepts_disputed = len(changed)

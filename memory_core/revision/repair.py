"""The repair worker: a bounded maintenance pass over the repair queue only (docs/architecture.md §4.11).

It takes the queued concepts (weakened / disputed / broken / stale, or holding several values of one fact)
in queue order, at most `max_actions` actions per run, and chooses from a finite action space:

| action | when | what |
|---|---|---|
| reattach | stale evidence: its text still reads the same in the message, its segment was re-cut | the span is re-anchored to the current segment holding it, active again |
| refine | weakened (evidence lost, some active) or a dispute since settled | title/description re-derived from the best surviving mention when they came from lost evidence; confidence = what the surviving evidence supports; trust stable |
| split | one concept holds claims of different values of one (subject, slot) | the minority values' evidence and mentions go to new concepts of their own |
| merge | a queued concept states exactly the facts (subject, slot, value) of an older live concept of its type | its evidence and mentions move there; it becomes a pointer (`merged`) |
| archive | broken: no surviving evidence | archived (the reject/archive action), citing the concept holding the message's current text if any |
| rebuild | with `global_resynthesis` only (an explicit flag): any live concept whose stored support, confidence or freshness disagree with its evidence | recomputed from its evidence; it was never queued, so it gets a `done` queue row of its own (before / after), rolled back like the others |

Every action cites the claims and spans it rests on, is one `repair` row per touched concept in the
append-only action log (whole rows and evidence as patches: replay reproduces the tables), and keeps the
before / after snapshots on its queue row, so `rollback_repairs` restores the state exactly. What it cannot
repair (a genuine conflict between two concepts, a queue longer than the budget) it reports and leaves
`escalated` / `queued` with the reason.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert, select, update

from memory_core.concepts import action_log as log
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.snapshots import (
    changed_concepts,
    current_snapshot,
    log_records,
    write_state,
)
from memory_core.concepts.store import read_concepts
from memory_core.errors import MemoryOSError
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.reports import Figures
from memory_core.revision.repair_actions import ACTOR, RepairWorker, Step
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import repair_queue

ACTIONS = ("reattach", "refine", "split", "merge", "archive", "rebuild")


class RepairError(MemoryOSError):
    """A repair cannot be rolled back (unknown, not applied, or its concepts changed since)."""


@dataclass
class RepairConfig:
    max_actions: int = 200  # actions per run: a bounded worker
    global_resynthesis: bool = False  # also rebuild every live concept, queued or not (explicit escalation)


@dataclass
class RepairReport:
    run_id: str = ""
    queued_before: int = 0
    repaired: int = 0
    actions: Counter = field(default_factory=Counter)
    escalated: list[dict] = field(default_factory=list)  # what it could not repair, with why
    remaining: int = 0  # still queued (budget spent)
    rebuilt: int = 0
    seconds: float = 0.0

    def as_metadata(self) -> Figures:
        return {
            "run_id": self.run_id,
            "queued_before": self.queued_before,
            "repaired": self.repaired,
            "repairs_by_action": dict(self.actions),
            "escalated": len(self.escalated),
            "unrepaired": self.escalated[:20],
            "remaining_queued": self.remaining,
            "rebuilt": self.rebuilt,
            "seconds": round(self.seconds, 3),
        }


def _combined_before(steps: list[Step]) -> dict:
    """The state before the first of several steps, for every concept any of them touched."""
    out: dict = {"concepts": {}, "evidence": {}, "mention_links": {}}
    for step in steps:
        for cid, row in step.before["concepts"].items():
            out["concepts"].setdefault(cid, row)
            out["evidence"].setdefault(cid, step.before["evidence"].get(cid, []))
        for mention_id, cid in step.before["mention_links"].items():
            out["mention_links"].setdefault(mention_id, cid)
    return out


def _queued(store: CorpusStore) -> list[dict]:
    with store.staging.connect() as conn:
        return [
            dict(r)
            for r in conn.execute(
                select(repair_queue)
                .where(repair_queue.c.status == "queued")
                .order_by(repair_queue.c.repair_id)
            ).mappings()
        ]


def _resolve(store: CorpusStore, repair_id: int, values: dict) -> None:
    with store.staging.begin() as conn:
        conn.execute(update(repair_queue).where(repair_queue.c.repair_id == repair_id).values(**values))


def _outcome(worker: RepairWorker, steps: list[Step], run_id: str, now: datetime) -> dict:
    """A queue row's resolution by applied steps: what was done, cited, and the before / after snapshots
    `rollback_repairs` restores from."""
    touched = sorted({c for s in steps for c in s.after["concepts"]})
    return dict(
        status="done",
        action="+".join(s.action for s in steps),
        note=" | ".join(f"{s.action}: {s.rationale}" for s in steps)[:4000],
        run_id=run_id,
        resolved_at=now,
        cited_claim_ids=sorted({c for s in steps for c in s.cited_claims})[:200],
        cited_message_ids=sorted({m for s in steps for m in s.cited_messages})[:200],
        before_state=_combined_before(steps),
        after_state=worker.ws.snapshot(touched),
    )


def _record_rebuild(store: CorpusStore, worker: RepairWorker, step: Step, cid: str, run_id: str,
                    now: datetime) -> None:  # fmt: skip
    """A rebuild was never queued: it gets a resolved queue row of its own, so it is listed, cited and
    rolled back like any other repair."""
    trust = (step.before["concepts"][cid] or {}).get("trust", "stable")
    with store.staging.begin() as conn:
        conn.execute(insert(repair_queue).values(
            concept_id=cid, trust=trust, reason="global resynthesis (explicit flag)", enqueued_at=now,
            **_outcome(worker, [step], run_id, now),
        ))  # fmt: skip


def _plan_for(worker: RepairWorker, cid: str) -> tuple[list[Step], str]:
    """The steps repairing one concept, in order, or none and why."""
    concept = worker.ws.concept(cid)
    if concept is None or not concept.live:
        return [], f"nothing to repair: the concept is {concept.state if concept else 'gone'}"
    steps = []
    for action in (worker.reattach, worker.split, worker.merge, worker.archive, worker.refine):
        step = action(cid)
        if step is not None:
            worker.apply(step)
            steps.append(step)
            if step.action in ("merge", "archive"):
                break
    if steps:
        return steps, ""
    concept = worker.ws.concept(cid)
    if concept.trust == "disputed":
        return [], "a live conflict with claims said at the same time: needs a person (or an LLM adjudicator)"
    return [], f"no action applies to a {concept.trust} concept"


def run_repairs(
    store: CorpusStore, config: RepairConfig | None = None, policy: ConceptPolicy | None = None,
    run_id: str = "", now: datetime | None = None,
) -> RepairReport:  # fmt: skip
    """Work the repair queue (and, with `global_resynthesis`, rebuild every live concept). The caller holds
    the corpus write lock."""
    repair_rows_behind(store)  # rows a dead consolidation left behind the log, before a worker reads them
    started = time.perf_counter()
    config, policy, now = config or RepairConfig(), policy or ConceptPolicy(), now or utcnow()
    report = RepairReport(run_id=run_id)
    worker = RepairWorker(store, policy, run_id, now)
    queue = _queued(store)
    report.queued_before = len(queue)
    budget = config.max_actions
    for row in queue:
        if budget <= 0:
            break
        cid = row["concept_id"]
        steps, why = _plan_for(worker, cid)
        budget -= max(1, len(steps))
        if not steps:
            live_conflict = why.startswith("a live conflict")
            status = "escalated" if live_conflict or why.startswith("no action") else "done"
            if status == "escalated":
                report.escalated.append({"concept_id": cid, "trust": row["trust"], "why": why})
            _resolve(store, row["repair_id"], dict(status=status, action="none", note=why, run_id=run_id,
                                                   resolved_at=now))  # fmt: skip
            continue
        for s in steps:
            report.actions[s.action] += 1
        report.repaired += 1
        _resolve(store, row["repair_id"], _outcome(worker, steps, run_id, now))
    if config.global_resynthesis and budget > 0:
        with store.staging.connect() as conn:
            live = sorted(read_concepts(conn, states=LIVE_STATES))
        for cid in live:
            if budget <= 0:
                break
            step = worker.rebuild(cid)
            if step is not None:
                worker.apply(step)
                budget -= 1
                report.actions["rebuild"] += 1
                report.rebuilt += 1
                _record_rebuild(store, worker, step, cid, run_id, now)
    report.remaining = len(_queued(store))
    report.seconds = time.perf_counter() - started
    return report


def rollback_repairs(
    store: CorpusStore, run_id: str | None = None, repair_ids: list[int] | None = None
) -> list[dict]:
    """Restore the state before repairs (a run's, newest first, or the given ones) exactly; refused when a
    touched concept changed since. The caller holds the corpus write lock."""
    repair_rows_behind(store)
    q = select(repair_queue).where(repair_queue.c.status == "done", repair_queue.c.before_state.is_not(None))
    if run_id:
        q = q.where(repair_queue.c.run_id == run_id)
    if repair_ids:
        q = q.where(repair_queue.c.repair_id.in_(repair_ids))
    with store.staging.connect() as conn:
        rows = [dict(r) for r in conn.execute(q.order_by(repair_queue.c.repair_id.desc())).mappings()]
    if not rows:
        raise RepairError("no applied repair to roll back" + (f" in run {run_id}" if run_id else ""))
    now, done = utcnow(), []
    for row in rows:
        before, after = row["before_state"], row["after_state"]
        current = current_snapshot(store, list(after["concepts"]))
        if current != after:
            changed = changed_concepts(after, current) or sorted(after["concepts"])
            raise RepairError(
                f"cannot roll back repair {row['repair_id']}: concept(s) {', '.join(changed[:5])} changed since"
            )
        with store.staging.begin() as conn:
            write_state(conn, after, before)
            log.append(conn, log_records(
                "rollback", after, before, f"rollback of repair {row['repair_id']} ({row['action']}): {row['note'][:400]}",
                list(row["cited_message_ids"] or []), {"rolled_back_repair_id": row["repair_id"]},
                f"rollback:{row['run_id']}", now, actor=ACTOR,
            ))  # fmt: skip
            conn.execute(
                update(repair_queue)
                .where(repair_queue.c.repair_id == row["repair_id"])
                .values(status="rolled_back", resolved_at=now)
            )
        done.append(
            {"repair_id": row["repair_id"], "action": row["action"], "concepts": sorted(after["concepts"])}
        )
    return done

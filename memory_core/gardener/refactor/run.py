"""Phase 1, Surgical Refactoring: pending proposals → a chooser's actions → validated, audited mutations.

For each proposal (merges first, hubs last), the neighbourhood is loaded from the run's `Workspace`, the
chooser plans actions, the `ActionBuilder` validates each one and computes its before/after snapshots, and
the workspace takes the after-state so later proposals see earlier changes. A real run writes every action
in its own transaction as soon as it is planned: the concept rows, evidence and mention links, one
`action_log` row per touched concept (actor "gardener") and the `gardener_actions` audit row; the proposal
becomes applied / rejected / stale. A dry run does all the planning and writes no memory state: the
would-be actions go to the report only (LLM calls an LLM chooser makes are still accounted in `llm_calls`).
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import insert

from memory_core.concepts import action_log as log
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.store import content_hash
from memory_core.gardener import proposals as lp
from memory_core.gardener.errors import RefusedActionError
from memory_core.gardener.refactor.actions import LOG_ACTION, ActionBuilder, PlannedAction
from memory_core.gardener.refactor.choosers import Chooser
from memory_core.gardener.refactor.neighbourhood import load_neighbourhood
from memory_core.gardener.refactor.state import (
    Workspace,
    changed_concepts,
    log_records,
    normalise_snapshot,
    write_state,
)
from memory_core.ids import stable_uuid
from memory_core.llm.accounting import call_row, record_calls
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import gardener_actions

STAGE = "gardener"


@dataclass
class ActionOutcome:
    gardener_action_id: str
    action: PlannedAction
    status: str  # applied | planned (dry run) | refused
    error: str = ""
    concept_ids: list[str] = field(default_factory=list)  # every concept the action changed
    before: dict | None = None
    after: dict | None = None

    def summary(self) -> dict:
        return {
            "gardener_action_id": self.gardener_action_id,
            "status": self.status,
            "error": self.error,
            "touched": self.concept_ids,
            **self.action.describe(),
        }


@dataclass
class RefactorReport:
    run_id: str
    corpus: str
    dry_run: bool
    chooser: str
    proposals_considered: int = 0
    decisions: Counter = field(default_factory=Counter)  # act / reject / stale / error per proposal
    by_category: dict = field(default_factory=dict)  # category -> Counter of decisions
    outcomes: list[ActionOutcome] = field(default_factory=list)
    proposal_notes: list[dict] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    not_considered: int = 0  # over max_actions
    hash_before: str = ""
    hash_after: str = ""
    seconds: float = 0.0
    llm_calls: int = 0

    @property
    def actions_by_type(self) -> dict[str, int]:
        c = Counter(o.action.action for o in self.outcomes if o.status in ("applied", "planned"))
        return dict(sorted(c.items()))

    @property
    def execution_errors(self) -> int:
        return sum(o.status == "refused" for o in self.outcomes) + self.decisions.get("error", 0)

    @property
    def mean_rationale_chars(self) -> float:
        done = [len(o.action.rationale) for o in self.outcomes if o.status in ("applied", "planned")]
        return round(sum(done) / len(done), 1) if done else 0.0

    @property
    def traceability(self) -> float:
        """Share of the merge/split actions the chooser planned that were cited and executed: a chooser that
        forgets citations shows here, while its refused actions never reach the store (the stored
        traceability is what the `merge_split_traceability` asset check measures)."""
        ms = [o for o in self.outcomes if o.action.action in ("merge_concepts", "split_concept")]
        ok = [o for o in ms if o.status in ("applied", "planned") and o.action.cited_message_ids]
        return round(len(ok) / len(ms), 4) if ms else 1.0

    @property
    def concept_delta(self) -> int:
        """Live concepts after minus before (merge: −merged; split: +groups − 1; archive: −1)."""
        delta = 0
        for o in self.outcomes:
            if o.status not in ("applied", "planned"):
                continue
            a = o.action
            if a.action == "merge_concepts":
                delta -= len(a.concept_ids) - 1
            elif a.action == "split_concept":
                delta += len(a.groups) - 1
            elif a.action == "archive_concept":
                delta -= 1
        return delta


def run_refactor(
    store: CorpusStore,
    chooser: Chooser,
    dry_run: bool = True,
    proposal_ids: list[str] | None = None,
    categories: list[str] | None = None,
    max_actions: int = 200,
    run_id: str | None = None,
    policy: ConceptPolicy | None = None,
    log_fn=None,
) -> RefactorReport:
    """Work through pending proposals (or exactly `proposal_ids`). The caller holds the corpus write lock."""
    if not dry_run:  # before the hash and the neighbourhoods: rows as the log has them (a dry run writes
        repair_rows_behind(store)  # nothing: it reads the rows as stored, left for the next writer to repair)
    run_id = run_id or uuid.uuid4().hex
    started = time.perf_counter()
    report = RefactorReport(run_id, store.name, dry_run, chooser.name, hash_before=content_hash(store))
    ws = Workspace(store)
    builder = ActionBuilder(ws, store.name, policy)
    todo = lp.load_proposals(store, proposal_ids, categories)
    sequence = 0
    for index, proposal in enumerate(todo):
        if sum(o.status != "refused" for o in report.outcomes) >= max_actions:
            report.not_considered = len(todo) - index
            break
        report.proposals_considered += 1
        hood = load_neighbourhood(ws, proposal)
        choice = chooser.choose(hood)
        if choice.llm_calls:
            report.llm_calls += len(choice.llm_calls)
            record_calls(store.staging, [call_row(r, STAGE) for r in choice.llm_calls])
        applied = 0
        for planned in choice.actions:
            sequence += 1
            outcome = _execute(store, ws, builder, planned, chooser.name, run_id, sequence, dry_run)
            report.outcomes.append(outcome)
            applied += outcome.status in ("applied", "planned")
            if outcome.status == "refused":
                report.errors.append(outcome.error)
        decision = choice.decision if choice.decision != "act" or applied else "reject"
        note = (
            choice.note
            if applied or choice.decision != "act"
            else f"{choice.note}; every planned action refused"
        )
        report.decisions[decision] += 1
        report.by_category.setdefault(proposal["category"], Counter())[decision] += 1
        report.proposal_notes.append(
            {
                "proposal_id": proposal["proposal_id"],
                "category": proposal["category"],
                "score": proposal["score"],
                "decision": decision,
                "note": note,
                "read_segment_ids": choice.read_segment_ids,
            }
        )
        if not dry_run and decision != "error":
            status = {"act": "applied", "reject": "rejected", "stale": "stale"}[decision]
            with store.staging.begin() as conn:
                lp.set_status(conn, proposal["proposal_id"], status, utcnow(), note[:2000])
        if log_fn and report.proposals_considered % 25 == 0:
            log_fn(f"{report.proposals_considered}/{len(todo)} proposals, {len(report.outcomes)} actions")
    report.hash_after = content_hash(store)
    report.seconds = time.perf_counter() - started
    return report


def apply_action(
    store: CorpusStore,
    planned: PlannedAction,
    actor: str = "manual",
    run_id: str | None = None,
    dry_run: bool = False,
) -> ActionOutcome:
    """One action outside a proposal run (an operator's own refine, merge, ...), validated and audited the
    same way. The caller holds the corpus write lock."""
    repair_rows_behind(store)
    run_id = run_id or uuid.uuid4().hex
    ws = Workspace(store)
    return _execute(store, ws, ActionBuilder(ws, store.name), planned, actor, run_id, 1, dry_run)


def _execute(
    store: CorpusStore,
    ws: Workspace,
    builder: ActionBuilder,
    planned: PlannedAction,
    chooser: str,
    run_id: str,
    sequence: int,
    dry_run: bool,
) -> ActionOutcome:
    action_id = stable_uuid("gardener_action", store.name, run_id, sequence)
    planned.scores = {**planned.scores, "sequence": sequence}
    now = utcnow()
    try:
        before, after = builder.build(planned, now)
        after = normalise_snapshot(after)
    except RefusedActionError as exc:
        if not dry_run:
            with store.staging.begin() as conn:
                conn.execute(
                    insert(gardener_actions),
                    [_audit_row(action_id, planned, {}, {}, chooser, run_id, now, "refused", str(exc))],
                )
        return ActionOutcome(action_id, planned, "refused", str(exc), list(planned.concept_ids))
    touched = changed_concepts(before, after)
    ws.put(after)
    if dry_run:
        return ActionOutcome(action_id, planned, "planned", "", touched, before, after)
    scores = {**planned.scores, "gardener_action_id": action_id, "proposal_id": planned.proposal_id}
    records = log_records(
        LOG_ACTION[planned.action],
        before,
        after,
        planned.rationale,
        planned.cited_message_ids,
        scores,
        run_id,
        now,
    )
    with store.staging.begin() as conn:
        write_state(conn, before, after)
        log.append(conn, records)
        conn.execute(
            insert(gardener_actions),
            [_audit_row(action_id, planned, before, after, chooser, run_id, now, "applied")],
        )
    return ActionOutcome(action_id, planned, "applied", "", touched, before, after)


def _audit_row(
    action_id: str,
    planned: PlannedAction,
    before: dict,
    after: dict,
    chooser: str,
    run_id: str,
    now: datetime,
    status: str,
    error: str | None = None,
) -> dict:
    touched = list(after.get("concepts", {})) or list(planned.concept_ids)
    return {
        "gardener_action_id": action_id,
        "proposal_id": planned.proposal_id,
        "action": planned.action,
        "concept_ids": touched,
        "before_state": before,
        "after_state": after,
        "rationale": planned.rationale,
        "cited_message_ids": planned.cited_message_ids,
        "dry_run": False,
        "status": status,
        "run_id": run_id,
        "recorded_at": now,
        "chooser": chooser[:100],
        "read_segment_ids": planned.read_segment_ids,
        "scores": {**planned.scores, "relation": planned.relation} if planned.relation else planned.scores,
        "error": error,
        "rolled_back_at": None,
    }

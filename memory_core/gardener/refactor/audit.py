"""Audit and rollback of Phase 1 actions (`gardener_actions`).

Rolling back an applied action writes its before-state back exactly: concept rows (a concept the action
created is removed again), evidence rows and mention links; then the content hash of canonical_concepts +
concept_evidence is what it was before the action. It is refused when any touched concept changed since
(a later gardener action or a memory-loop run): those changes would be lost, so they must be rolled back
first (a whole run rolls back newest first). The rollback itself is history: one `action_log` row per
concept (action "rollback"), and the audit row becomes `rolled_back` with the time.
"""

from __future__ import annotations

from sqlalchemy import select, update

from memory_core.concepts import action_log as log
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.gardener import proposals as lp
from memory_core.gardener.errors import GardenerError, RollbackConflictError
from memory_core.gardener.refactor.state import changed_concepts, current_snapshot, log_records, write_state
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import gardener_actions


def get_action(store: CorpusStore, action_id: str) -> dict:
    with store.staging.connect() as conn:
        row = (
            conn.execute(select(gardener_actions).where(gardener_actions.c.gardener_action_id == action_id))
            .mappings()
            .first()
        )
    if row is None:
        raise GardenerError(f"no gardener action {action_id!r} in corpus {store.name!r}")
    return dict(row)


def list_actions(store: CorpusStore, run_id: str | None = None, status: str | None = None) -> list[dict]:
    """Audit rows in the order they were executed."""
    g = gardener_actions.c
    query = select(gardener_actions)
    if run_id:
        query = query.where(g.run_id == run_id)
    if status:
        query = query.where(g.status == status)
    with store.staging.connect() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    return sorted(rows, key=lambda r: (r["recorded_at"], (r["scores"] or {}).get("sequence", 0)))


def rollback_action(store: CorpusStore, action_id: str, run_id: str = "rollback") -> dict:
    """Restore the state before `action_id`. The caller holds the corpus write lock."""
    repair_rows_behind(store)  # compared with the action's after-state as the log has the rows
    row = get_action(store, action_id)
    if row["status"] != "applied":
        raise GardenerError(f"gardener action {action_id} is {row['status']}: only applied actions roll back")
    before, after = row["before_state"], row["after_state"]
    current = current_snapshot(store, list(after["concepts"]))
    if current != after:
        changed = changed_concepts(after, current) or sorted(after["concepts"])
        later = [
            a["gardener_action_id"]
            for a in list_actions(store, status="applied")
            if a["recorded_at"] > row["recorded_at"] and set(a["concept_ids"]) & set(after["concepts"])
        ]
        raise RollbackConflictError(
            f"cannot roll back gardener action {action_id}: concept(s) {', '.join(changed[:5])} changed since "
            + (
                f"(later gardener actions {', '.join(later[:5])}: roll those back first)"
                if later
                else "(the memory loop added evidence since)"
            )
        )
    now = utcnow()
    records = log_records(
        "rollback",
        after,
        before,
        f"rollback of gardener action {action_id} ({row['action']}): {row['rationale'][:500]}",
        list(row["cited_message_ids"]),
        {"rolled_back_action_id": action_id, "proposal_id": row["proposal_id"]},
        run_id,
        now,
    )
    with store.staging.begin() as conn:
        write_state(conn, after, before)
        log.append(conn, records)
        conn.execute(
            update(gardener_actions)
            .where(gardener_actions.c.gardener_action_id == action_id)
            .values(status="rolled_back", rolled_back_at=now)
        )
        if row["proposal_id"]:
            lp.set_status(conn, row["proposal_id"], "rolled_back", now, f"action {action_id} rolled back")
    return {"gardener_action_id": action_id, "action": row["action"], "concepts": sorted(before["concepts"])}


def rollback_run(store: CorpusStore, run_id: str) -> list[dict]:
    """Roll back every applied action of a Phase 1 run, newest first."""
    applied = list_actions(store, run_id=run_id, status="applied")
    if not applied:
        raise GardenerError(f"no applied gardener action of run {run_id!r} in corpus {store.name!r}")
    return [
        rollback_action(store, a["gardener_action_id"], run_id=f"rollback:{run_id}"[:64])
        for a in reversed(applied)
    ]

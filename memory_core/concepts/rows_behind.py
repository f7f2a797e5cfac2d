"""Concept rows behind the ActionLog, recorded explicitly (`concept_rows_behind`), and their repair.

The memory loop rewrites a concept row holding many spans only once its evidence doubled, and at the run's
end (`memory_loop/apply.py: ROW_DEFER_MIN_SPANS`); until then the row lags its log rows and its
`concept_evidence` rows. `flush` records each id it leaves behind in the transaction that logs the change,
and the transaction that finally writes the row removes it. A run that died (killed, or an exception after
some batches) leaves ids here.

Every writer of concept rows calls `repair_rows_behind` first, under the corpus write lock: a writer that
read a lagging row and wrote it back (a whole-row patch in the log, `recorded_at = now`) would make the lag
permanent, since replay would then agree with the damaged row. The repair rebuilds the rows from their own
log rows, as the run would have written them. Detection is a one-row read of this table, whatever the size
of the log, and depends on no timestamp (a restored snapshot's older `recorded_at`, clocks of two hosts).
Readers can tell the same way (`rows_behind`): during a build the rows listed here lag.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlalchemy import Connection, delete, insert, select

from memory_core.concepts.action_log import REPLAY_COLUMNS, replay_concepts
from memory_core.concepts.store import update_concepts
from memory_core.store.db import CorpusStore
from memory_core.store.schema import action_log, concept_rows_behind

logger = logging.getLogger(__name__)
_CHUNK = 500


def mark_rows_behind(conn: Connection, ids: Iterable[str]) -> None:
    """Record that these concepts' rows lag their log (inside the transaction that logs their change)."""
    ids = sorted(set(ids))
    if ids:
        conn.execute(insert(concept_rows_behind), [{"concept_id": c} for c in ids])


def clear_rows_behind(conn: Connection, ids: Iterable[str]) -> None:
    """These rows are written (inside the transaction that writes them)."""
    ids = sorted(set(ids))
    for i in range(0, len(ids), _CHUNK):
        conn.execute(
            delete(concept_rows_behind).where(concept_rows_behind.c.concept_id.in_(ids[i : i + _CHUNK]))
        )


def rows_behind(conn: Connection) -> list[str]:
    return list(conn.execute(select(concept_rows_behind.c.concept_id).order_by("concept_id")).scalars())


def repair_rows_behind(target: CorpusStore | Connection) -> int:
    """Rebuild the rows a dead run left behind from their log rows (in the caller's transaction, or a
    transaction of its own on a store); how many were rebuilt. A concept whose log rows do not replay is
    logged and left as its row stands (the log-replay check reports its log) rather than stopping every
    later writer."""
    if isinstance(target, CorpusStore):
        with target.staging.begin() as conn:
            return repair_rows_behind(conn)
    conn = target
    if conn.execute(select(concept_rows_behind.c.concept_id).limit(1)).first() is None:
        return 0
    ids = rows_behind(conn)
    rows: dict[str, list[dict]] = {c: [] for c in ids}
    for i in range(0, len(ids), _CHUNK):
        query = select(*REPLAY_COLUMNS).where(action_log.c.concept_id.in_(ids[i : i + _CHUNK]))
        for r in conn.execute(query.order_by(action_log.c.action_id)).mappings():
            rows[r["concept_id"]].append(dict(r))
    rebuilt = []
    for cid in ids:  # one replay per concept: each log row patches only its own concept
        try:
            concepts, _ = replay_concepts(rows[cid])
        except ValueError as exc:
            logger.warning("concept %s: its row lags its log, whose rows do not replay: %s", cid, exc)
            continue
        if cid in concepts:
            rebuilt.append(concepts[cid])
    update_concepts(conn, rebuilt)
    clear_rows_behind(conn, ids)
    logger.info("rebuilt %d concept row(s) a dead run had left behind the action log", len(rebuilt))
    return len(rebuilt)

"""The version stamp of a store: what a long-lived reader compares to know whether its cached tables are
still the store's content.

Every store database holds one `store_version` row (schema.py): `epoch`, drawn when the store is created,
and `version`, raised by one in every transaction that wrote — in that same transaction, just before it
commits, so a reader sees the new stamp exactly when it can see the new rows (never before: a Postgres
sequence would advance before the commit is visible; never a row count, which an in-place UPDATE leaves
alike). The same mechanism on SQLite and Postgres, with no per-row cost: a row trigger would double the
cost of a bulk insert, so the write is noticed on the connection (`before_cursor_execute`) and the bump is
one UPDATE at commit.
"""

from __future__ import annotations

from sqlalchemy import Engine, event, select

from memory_core.store.schema import store_versions

# statements that change a store (DDL too: a new column is a new content contract)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "ALTER", "DROP", "UPSERT", "MERGE", "TRUNCATE")
_BUMP = "UPDATE store_version SET version = version + 1 WHERE id = 1"
_WROTE = "memory_os_wrote"
_TRACKED = "memory_os_version_tracked"


def _is_write(statement: str) -> bool:
    return statement.lstrip()[:8].upper().startswith(_WRITES)


def track_versions(engine: Engine) -> None:
    """Make every write transaction on `engine` (a store's engine: it has `store_version`) raise the
    version stamp. Idempotent."""
    if engine.__dict__.get(_TRACKED):
        return
    engine.__dict__[_TRACKED] = True

    @event.listens_for(engine, "before_cursor_execute")
    def _note_write(conn, _cursor, statement, _params, _context, _executemany):
        if not conn.info.get(_WROTE) and _is_write(statement) and "store_version" not in statement:
            conn.info[_WROTE] = True

    @event.listens_for(engine, "commit")
    def _bump(conn):  # runs before the driver's commit: the bump is part of the transaction
        if conn.info.pop(_WROTE, False):
            cursor = conn.connection.dbapi_connection.cursor()
            try:
                cursor.execute(_BUMP)
            finally:
                cursor.close()

    @event.listens_for(engine, "rollback")
    def _forget(conn):
        conn.info.pop(_WROTE, None)

    @event.listens_for(engine.pool, "reset")
    def _forget_on_return(_dbapi_conn, record, _state=None):
        record.info.pop(_WROTE, None)


def read_version(engine: Engine, store: str) -> tuple[str, int]:
    """(epoch, version) of a store: equal stamps, equal content."""
    table = store_versions[store]
    with engine.connect() as conn:
        row = conn.execute(select(table.c.epoch, table.c.version).where(table.c.id == 1)).first()
    return (row.epoch, int(row.version)) if row else ("", 0)

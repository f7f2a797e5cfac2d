"""The version stamp of a store: what a long-lived reader compares to know whether its cached tables are
still the store's content.

Every store database holds one `store_version` row (schema.py): `epoch`, drawn when the store is created,
and `version`, raised by one in every transaction that wrote — in that same transaction, just before it
commits, so a reader sees the new stamp exactly when it can see the new rows (never before: a Postgres
sequence would advance before the commit is visible; never a row count, which an in-place UPDATE leaves
alike). The same mechanism on SQLite and Postgres, with no per-row cost: a row trigger would double the
cost of a bulk insert, so the write is noticed on the connection (`before_cursor_execute`) and the bump is
one UPDATE at commit.

Each table has its own counter too (`table_versions`), raised at the same commit for the tables the
transaction's statements wrote (read off the statement: INSERT INTO / UPDATE / DELETE FROM / CREATE, ALTER,
DROP TABLE …; a write naming no table raises `*`, which every table's fingerprint also keys on), so a stage
can tell that a table is unchanged without reading it (memory_core.store.fingerprint).
"""

from __future__ import annotations

import re

from sqlalchemy import Engine, event, select

from memory_core.store.schema import store_versions, table_versions

# statements that change a store (DDL too: a new column is a new content contract)
_WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "CREATE", "ALTER", "DROP", "UPSERT", "MERGE", "TRUNCATE")
_BUMP = "UPDATE store_version SET version = version + 1 WHERE id = 1"
_BUMP_TABLE = (
    "INSERT INTO table_versions (table_name, version) VALUES (?, 1) "
    "ON CONFLICT (table_name) DO UPDATE SET version = table_versions.version + 1"
)
# the bookkeeping tables themselves: writing them is no write of the store's content
_BOOKKEEPING = ("store_version", "table_versions", "table_fingerprints")
_WRITTEN_TABLE = re.compile(
    r"\s*(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM"
    r"|(?:CREATE|DROP)\s+TABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?|ALTER\s+TABLE|TRUNCATE(?:\s+TABLE)?)"
    r"\s+(?:ONLY\s+)?[\"`]?(\w+)",
    re.IGNORECASE,
)
_INDEX_DDL = re.compile(r"\s*(?:CREATE|DROP)\s+(?:UNIQUE\s+)?INDEX", re.IGNORECASE)
ANY_TABLE = "*"
_WROTE = "memory_os_wrote"
_WROTE_TABLES = "memory_os_wrote_tables"
_TRACKED = "memory_os_version_tracked"


_CTE_WRITE = re.compile(r"\b(?:INSERT|UPDATE|DELETE)\b", re.IGNORECASE)


def _is_write(statement: str) -> bool:
    head = statement.lstrip()[:8].upper()
    return head.startswith(_WRITES) or (head.startswith("WITH") and bool(_CTE_WRITE.search(statement)))


def written_table(statement: str) -> str:
    """The table a write statement changes (lower case); `*` when no single unqualified name can be read
    off it (a schema-qualified name, a name with other characters, several tables): a wrong name would keep
    a stale digest, `*` only costs a rehash."""
    match = _WRITTEN_TABLE.match(statement)
    if not match:
        return ANY_TABLE
    rest = statement[match.end() :]
    if rest[:1] not in ("", " ", "\n", "\t", "(", '"', "`") or rest.lstrip('"`').lstrip()[:1] in (".", ","):
        return ANY_TABLE
    return match.group(1).lower()


def track_versions(engine: Engine) -> None:
    """Make every write transaction on `engine` (a store's engine: it has `store_version`) raise the
    version stamp. Idempotent."""
    if engine.__dict__.get(_TRACKED):
        return
    engine.__dict__[_TRACKED] = True

    bump_table = _BUMP_TABLE if engine.dialect.paramstyle == "qmark" else _BUMP_TABLE.replace("?", "%s")

    @event.listens_for(engine, "before_cursor_execute")
    def _note_write(conn, _cursor, statement, _params, _context, _executemany):
        if not _is_write(statement):
            return
        index = _INDEX_DDL.match(statement)  # an index is a change of the store, not of a table's rows
        table = None if index else written_table(statement)
        if table in _BOOKKEEPING:
            return
        conn.info[_WROTE] = True
        if table is not None:
            conn.info.setdefault(_WROTE_TABLES, set()).add(table)

    @event.listens_for(engine, "commit")
    def _bump(conn):  # runs before the driver's commit: the bump is part of the transaction
        tables = conn.info.pop(_WROTE_TABLES, set())
        if conn.info.pop(_WROTE, False):
            cursor = conn.connection.dbapi_connection.cursor()
            try:
                cursor.execute(_BUMP)
                for table in sorted(tables):  # one order: two writers never wait on each other's rows
                    cursor.execute(bump_table, (table,))
            finally:
                cursor.close()

    @event.listens_for(engine, "rollback")
    def _forget(conn):
        conn.info.pop(_WROTE, None)
        conn.info.pop(_WROTE_TABLES, None)

    @event.listens_for(engine.pool, "reset")
    def _forget_on_return(_dbapi_conn, record, _state=None):
        record.info.pop(_WROTE, None)
        record.info.pop(_WROTE_TABLES, None)


def read_version(engine: Engine, store: str) -> tuple[str, int]:
    """(epoch, version) of a store: equal stamps, equal content."""
    table = store_versions[store]
    with engine.connect() as conn:
        row = conn.execute(select(table.c.epoch, table.c.version).where(table.c.id == 1)).first()
    return (row.epoch, int(row.version)) if row else ("", 0)


def table_version(conn, table: str) -> str:
    """The table's write counter and the store's `*` counter, as one key (a connection of the store's engine)."""
    versions = table_versions["staging"][0]  # the same columns in every store's metadata
    rows = dict(
        conn.execute(
            select(versions.c.table_name, versions.c.version).where(
                versions.c.table_name.in_([table, ANY_TABLE])
            )
        ).all()
    )
    return f"{rows.get(table, 0)}:{rows.get(ANY_TABLE, 0)}"

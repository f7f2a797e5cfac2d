"""Bringing a store's schema up to the current contract: tables created (safe against another process
creating them at the same moment), columns and indexes a newer version added, constraints it retired.
`CorpusStore` runs these once per store file per process (memory_core/store/db.py)."""

from __future__ import annotations

import logging

from sqlalchemy import Engine, MetaData, inspect
from sqlalchemy import exc as sqlalchemy_exc

from memory_core.errors import SchemaMismatchError
from memory_core.retrying import again_while

logger = logging.getLogger(__name__)

# what losing the race to create a table or an index looks like: the other process created it first (Postgres
# may say so as a duplicate key in its catalogue), or (SQLite in WAL mode) it wrote between this transaction's
# look and its CREATE, which SQLite answers at once with "database is locked" (a read transaction cannot be
# upgraded past a newer commit; no busy wait applies)
_CREATE_RACE = ("already exists", "database is locked", "duplicate key value violates unique constraint")
_RACE_ERRORS = (
    sqlalchemy_exc.OperationalError,
    sqlalchemy_exc.ProgrammingError,
    sqlalchemy_exc.IntegrityError,
)


def create_tables(metadata: MetaData, engine: Engine, attempts: int = 10) -> None:
    """`metadata.create_all`, safe against another process creating the same tables at the same moment
    (the home's registry and shared caches are opened by every run process): SQLAlchemy looks before it
    creates, so the loser of that race fails (`_CREATE_RACE`) and looks again."""
    _looking_again(lambda: metadata.create_all(engine), attempts)


def _looking_again(create, attempts: int = 10) -> None:
    """`create()` (which looks before it creates), again while it loses a race to another process."""
    again_while(create, _RACE_ERRORS, _CREATE_RACE, attempts)


def ensure_columns(engine: Engine, metadata: MetaData, what: str) -> None:
    """Bring tables created by an older version up to the current contract.

    `create_all` creates missing tables but never alters existing ones: a missing nullable column is added in
    place; a missing NOT NULL column cannot be back-filled honestly, so the store must be rebuilt.
    """
    inspector = inspect(engine)
    existing_tables = set(inspector.get_table_names())
    for table in metadata.sorted_tables:
        if table.name not in existing_tables:
            continue
        present = {c["name"] for c in inspector.get_columns(table.name)}
        missing = [c for c in table.columns if c.name not in present]
        if not missing:
            continue
        required = [c.name for c in missing if not c.nullable]
        if required:
            raise SchemaMismatchError(
                f"{what}: table {table.name} was created by an older Memory OS and lacks {', '.join(required)}; "
                f"rebuild it (`memory-os corpus remove NAME --delete-data`, then add and materialize again)"
            )
        with engine.begin() as conn:
            for column in missing:
                ddl = (
                    f"ALTER TABLE {table.name} ADD COLUMN {column.name} {column.type.compile(engine.dialect)}"
                )
                conn.exec_driver_sql(ddl)


def ensure_indexes(engine: Engine, metadata: MetaData) -> None:
    """Create the indexes a newer version added to tables an older one created (`create_all` makes a
    table's indexes only with the table). The first open after an upgrade builds them; later ones look."""
    inspector = inspect(engine)
    existing_tables = set(inspector.get_table_names())
    for table in metadata.sorted_tables:
        if table.name not in existing_tables or not table.indexes:
            continue
        present = {i["name"] for i in inspector.get_indexes(table.name)}
        for index in sorted(table.indexes, key=lambda i: i.name):
            if index.name not in present:
                logger.info("creating index %s on %s (added by a newer Memory OS)", index.name, table.name)
                _looking_again(lambda index=index: index.create(engine, checkfirst=True))


# unique constraints older versions created that the contract no longer has: table → constraint name
RETIRED_CONSTRAINTS = {"dead_letters": "uq_dead_letter"}  # one dead-letter row per dead record


def retire_constraints(engine: Engine, metadata: MetaData) -> None:
    """Drop the retired unique constraints from tables an older version created (SQLite cannot drop a
    constraint: the table is rebuilt with its rows)."""
    for name, constraint in RETIRED_CONSTRAINTS.items():
        table = metadata.tables.get(name)
        if table is None:
            continue
        with engine.begin() as conn:
            if conn.dialect.name != "sqlite":
                conn.exec_driver_sql(f"ALTER TABLE {name} DROP CONSTRAINT IF EXISTS {constraint}")
                continue
            ddl = conn.exec_driver_sql(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
            ).scalar()
            if not ddl or constraint not in ddl:
                continue
            old = f"_{name}_retired"
            conn.exec_driver_sql(f"ALTER TABLE {name} RENAME TO {old}")
            for index in table.indexes:
                conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
            table.create(conn)
            columns = ", ".join(c.name for c in table.columns)
            conn.exec_driver_sql(f"INSERT INTO {name} ({columns}) SELECT {columns} FROM {old}")
            conn.exec_driver_sql(f"DROP TABLE {old}")

"""A content fingerprint of stored tables: what a stage wrote, hashed row by row in primary-key order.

Dagster's data version of a stage's materialisation (an unchanged rebuild gives the same version, so nothing
downstream is marked stale). Run logs (`ingest_files`, `topic_builds`) are no stage's content.

Each table's digest is kept with the table's write counter (memory_core.store.version) and reused while the
counter stands: every asset of a run hashed its tables again, and `graph` and `indexes` every table they are
loaded from — on a 500-turn LongMemEval haystack 0.68 s of an unchanged rebuild's ~10 s, growing with the
corpus. A digest is kept only when the counter did not move while the table was read.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.exc import SQLAlchemyError

from memory_core.store.db import CorpusStore
from memory_core.store.schema import METADATA_BY_STORE, table_versions
from memory_core.store.version import table_version

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Fingerprint:
    digest: str
    rows: dict[str, int]  # "store.table" → rows


def table(store_name: str, table_name: str):
    return METADATA_BY_STORE[store_name].tables[table_name]


def fingerprint(
    store: CorpusStore,
    tables: Sequence[tuple[str, str]],
    exclude: Mapping[tuple[str, str], Collection[str]] | None = None,
) -> Fingerprint:
    """sha256 over every row of `tables` ((store, table) pairs) of `store`, in primary-key order, without the
    `exclude`d columns of a table (those a later stage fills in)."""
    digest = hashlib.sha256()
    rows: dict[str, int] = {}
    for store_name, table_name in tables:
        t = table(store_name, table_name)
        skip = set((exclude or {}).get((store_name, table_name), ()))
        columns = [c for c in t.columns if c.name not in skip]
        table_digest, n = _table_digest(store, store_name, t, columns)
        digest.update(f"\x00{store_name}.{table_name}\x00{table_digest}".encode())
        rows[f"{store_name}.{table_name}"] = n
    return Fingerprint(digest.hexdigest(), rows)


def _table_digest(store: CorpusStore, store_name: str, t, columns: list) -> tuple[str, int]:
    """(sha256 of the table's `columns`, rows): the kept one while the table's counter stands."""
    engine = store.engine(store_name)
    cache = table_versions[store_name][1]
    key = hashlib.sha256("\x1f".join(c.name for c in columns).encode()).hexdigest()
    where = (cache.c.table_name == t.name) & (cache.c.columns_key == key)
    with engine.connect() as conn:
        version = table_version(conn, t.name)
        kept = conn.execute(select(cache.c.version, cache.c.digest, cache.c.row_count).where(where)).first()
        if kept is not None and kept.version == version:
            return kept.digest, int(kept.row_count)
        digest, n = hashlib.sha256(), 0
        for row in conn.execute(select(*columns).order_by(*(list(t.primary_key.columns) or columns))):
            digest.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
            n += 1
    if not store.readonly:
        row = dict(
            table_name=t.name, columns_key=key, version=version, digest=digest.hexdigest(), row_count=n
        )
        try:
            with engine.begin() as conn:
                if table_version(conn, t.name) == version:  # nobody wrote the table while it was read
                    conn.execute(delete(cache).where(where))
                    conn.execute(insert(cache).values(**row))
        except SQLAlchemyError as err:  # a kept digest only saves time: never fail a stage for it
            log.info("the digest of %s.%s was not kept (%s)", store_name, t.name, type(err).__name__)
    return digest.hexdigest(), n


def row_count(store: CorpusStore, store_name: str, table_name: str) -> int:
    with store.engine(store_name).connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(table(store_name, table_name))).scalar() or 0
        )

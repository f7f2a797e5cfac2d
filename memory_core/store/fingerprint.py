"""A content fingerprint of stored tables: what a stage wrote, hashed row by row in primary-key order.

Dagster's data version of a stage's materialisation (an unchanged rebuild gives the same version, so nothing
downstream is marked stale). Run logs (`ingest_files`, `topic_builds`) are no stage's content.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy import func, select

from memory_core.store.db import CorpusStore
from memory_core.store.schema import METADATA_BY_STORE


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
        order = list(t.primary_key.columns) or columns
        digest.update(f"\x00{store_name}.{table_name}\x00".encode())
        n = 0
        with store.engine(store_name).connect() as conn:
            for row in conn.execute(select(*columns).order_by(*order)):
                digest.update(repr(tuple(row)).encode("utf-8", "surrogatepass"))
                n += 1
        rows[f"{store_name}.{table_name}"] = n
    return Fingerprint(digest.hexdigest(), rows)


def row_count(store: CorpusStore, store_name: str, table_name: str) -> int:
    with store.engine(store_name).connect() as conn:
        return int(
            conn.execute(select(func.count()).select_from(table(store_name, table_name))).scalar() or 0
        )

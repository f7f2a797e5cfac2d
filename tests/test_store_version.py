"""The store version stamp on SQLite (the Postgres twin is in test_postgres.py): raised by every write
transaction, at its commit, never by a read or a rolled-back write; a store created again has a new epoch;
a long-lived reader reloads on an in-place change that leaves every row count alike."""

from __future__ import annotations

import shutil
from datetime import datetime

import pytest
from sqlalchemy import func, insert, select, update

from memory_core.store.db import MemoryHome, dispose_engines
from memory_core.store.schema import canonical_concepts, residuals


def _residual() -> dict:
    return dict(stage="extraction", reason_code="x", reason="r", payload={}, recorded_at=datetime(2024, 1, 1))


def test_every_write_transaction_raises_the_stamp_once_and_reads_never(home):
    store = home.corpus("notes")
    epoch, start = store.version("staging")
    with store.staging.begin() as conn:  # one transaction, three statements: one step
        conn.execute(insert(residuals), [_residual(), _residual()])
        conn.execute(insert(residuals), [_residual()])
        conn.execute(update(residuals).values(reason="changed"))
    assert store.version("staging") == (epoch, start + 1)
    with store.staging.connect() as conn:
        conn.execute(select(func.count()).select_from(residuals)).scalar_one()
    assert store.version("staging") == (epoch, start + 1)
    with pytest.raises(RuntimeError), store.staging.begin() as conn:
        conn.execute(insert(residuals), [_residual()])
        raise RuntimeError("rolled back")
    assert store.version("staging") == (epoch, start + 1)


def test_a_store_created_again_never_repeats_a_stamp(home):
    store = home.corpus("notes")
    with store.staging.begin() as conn:
        conn.execute(insert(residuals), [_residual()])
    first = store.version("staging")
    dispose_engines()
    shutil.rmtree(store.dir)
    again = home.corpus("notes")
    with again.staging.begin() as conn:
        conn.execute(insert(residuals), [_residual()])
    assert again.version("staging")[1] == first[1] and again.version("staging")[0] != first[0]


def test_a_long_lived_reader_sees_an_in_place_refine(built_demo, tmp_path):
    from memory_query.reader import CorpusReader

    dispose_engines()
    shutil.copytree(built_demo[0].root, tmp_path / "home")
    home = MemoryHome.resolve(tmp_path / "home")
    store = home.corpus("demo")
    reader = CorpusReader(store.read_only())
    before = reader.concepts()
    assert reader.concepts() is before
    concept_id = before.ids[0]
    with store.staging.begin() as conn:  # same rows, same counts, new content
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == concept_id)
            .values(title="Refined")
        )
    after = reader.concepts()
    assert after is not before and len(after.ids) == len(before.ids)
    assert after.rows[after.index[concept_id]]["title"] == "Refined"
    dispose_engines()

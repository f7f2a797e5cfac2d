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


def test_each_table_counts_the_transactions_that_wrote_it(home):
    """Per table, a counter raised once per transaction that wrote it; a write naming no table raises `*`;
    the bookkeeping (counters, kept fingerprints) is no write of the store's content."""
    from sqlalchemy import text

    from memory_core.store.version import table_version, written_table

    store = home.corpus("notes")
    with store.staging.connect() as conn:
        residuals_before, concepts_before = table_version(conn, "residuals"), table_version(conn, "canonical_concepts")
    stamp = store.version("staging")
    with store.staging.begin() as conn:
        conn.execute(insert(residuals), [_residual(), _residual()])
        conn.execute(update(residuals).values(reason="changed"))
    with store.staging.connect() as conn:
        after = table_version(conn, "residuals")
        assert int(after.split(":")[0]) == int(residuals_before.split(":")[0]) + 1
        assert table_version(conn, "canonical_concepts") == concepts_before  # not written
    with store.staging.begin() as conn:
        conn.execute(text("WITH gone AS (SELECT 1) DELETE FROM residuals WHERE reason = 'nothing'"))
    with store.staging.connect() as conn:
        any_after = table_version(conn, "canonical_concepts")
        assert any_after.split(":")[1] != concepts_before.split(":")[1]  # `*`: every table may have changed
    assert store.version("staging")[1] == stamp[1] + 2
    assert written_table('INSERT OR IGNORE INTO "mentions" (a) VALUES (1)') == "mentions"
    assert written_table("ALTER TABLE segments ADD COLUMN x TEXT") == "segments"
    assert written_table("DELETE FROM concept_evidence WHERE 1") == "concept_evidence"
    for unclear in ("INSERT INTO main.mentions VALUES (1)", 'DELETE FROM "public"."x"', 'INSERT INTO "my-t" VALUES (1)',
                    "TRUNCATE a, b", "DROP TABLE a, b"):  # fmt: skip
        assert written_table(unclear) == "*", unclear  # a wrong name would keep a stale digest: `*` instead


def test_a_table_is_hashed_again_only_after_a_write(home):
    """A stage's data version reuses a table's kept digest while its counter stands, and hashes it again
    after any write — an in-place UPDATE that leaves the row count alike included."""
    from sqlalchemy import event

    from memory_core.store.fingerprint import fingerprint

    store = home.corpus("notes")
    with store.staging.begin() as conn:
        conn.execute(insert(residuals), [_residual(), _residual()])
    reads: list[str] = []
    engine = store.staging

    def note(_conn, _cursor, statement, *_):
        if statement.lstrip().upper().startswith("SELECT") and "FROM residuals" in statement:
            reads.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        first = fingerprint(store, [("staging", "residuals")])
        stamp = store.version("staging")
        assert len(reads) == 1 and first.rows == {"staging.residuals": 2}
        again = fingerprint(store, [("staging", "residuals")])
        assert again == first and len(reads) == 1  # kept: the table was not read again
        assert store.version("staging") == stamp  # keeping a digest wrote no content
        narrower = fingerprint(store, [("staging", "residuals")], {("staging", "residuals"): {"payload"}})
        assert narrower.digest != first.digest and len(reads) == 2  # other columns: another digest
        with store.staging.begin() as conn:
            conn.execute(update(residuals).values(reason="changed in place"))
        changed = fingerprint(store, [("staging", "residuals")])
        assert len(reads) == 3 and changed.digest != first.digest and changed.rows == first.rows
        with store.staging.begin() as conn:
            conn.execute(update(residuals).values(reason="r"))
        assert fingerprint(store, [("staging", "residuals")]) == first  # the same content, the same version
    finally:
        event.remove(engine, "before_cursor_execute", note)

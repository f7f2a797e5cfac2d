"""A store's schema is checked (tables created, columns brought up to date) once per file per process, not
by every stage that opens the corpus, and again for a new file of the same name."""

from __future__ import annotations

from sqlalchemy import inspect

from memory_core.store import db
from memory_core.store.db import dispose_engines


def test_a_store_file_is_checked_once_per_process_and_again_when_it_is_a_new_file(home, monkeypatch):
    checked: list[str] = []
    real = db.ensure_columns

    def counted(engine, metadata, what):
        checked.append(what)
        return real(engine, metadata, what)

    monkeypatch.setattr(db, "ensure_columns", counted)
    home.corpus("dana").staging  # noqa: B018 - opening is the point
    home.corpus("dana").staging  # noqa: B018 - another stage, the same file
    assert checked == ["corpus 'dana' (staging)"]
    home.corpus("max").staging  # noqa: B018
    assert len(checked) == 2
    # engines disposed (as a removal of the corpus's files does): what was checked is forgotten, the new
    # file is checked again
    dispose_engines()
    for leftover in home.corpus("dana").dir.glob("staging.db*"):
        leftover.unlink()
    fresh = home.corpus("dana").staging
    assert len(checked) == 3 and "segments" in inspect(fresh).get_table_names()


def test_an_index_a_newer_version_added_is_created_on_a_store_an_older_one_made(home):
    """`create_all` makes a table's indexes only with the table: a store whose residuals table predates
    `ix_residuals_stage_mention` gets it when it is next opened, and the loop's look for pending mentions
    then finds a mention's residual through it instead of walking every residual of the stage (70 s of a
    100k-message build without it)."""
    from memory_core.memory_loop.loop import _pending_query

    store = home.corpus("dana")
    with store.staging.begin() as conn:
        conn.exec_driver_sql("DROP INDEX ix_residuals_stage_mention")
    dispose_engines()
    reader = home.corpus("dana", readonly=True).staging  # a reader writes no DDL for speed
    assert "ix_residuals_stage_mention" not in {i["name"] for i in inspect(reader).get_indexes("residuals")}
    reopened = home.corpus("dana").staging  # the same process's writer still brings it up to date
    names = {i["name"] for i in inspect(reopened).get_indexes("residuals")}
    assert "ix_residuals_stage_mention" in names
    with reopened.connect() as conn:
        compiled = _pending_query().compile(reopened, compile_kwargs={"literal_binds": True})
        plan = " | ".join(r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {compiled}"))
    assert "USING INDEX ix_residuals_stage_mention" in plan and "ix_residuals_stage " not in plan, plan

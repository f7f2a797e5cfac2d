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

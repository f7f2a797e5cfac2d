"""The memory home's shared SQLite files (the corpus registry, the LLM response cache) are opened by every
run process at once — `memory_assets.parallel`, two `memory-os materialize` of different corpora — so
creating their tables must survive another process creating them at the same moment."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, event, inspect

from memory_core.llm.cache import ResponseCache, llm_responses
from memory_core.store.db import MemoryHome, create_tables, dispose_engines
from tests.released_together import released_together


def _notes() -> MetaData:
    metadata = MetaData()
    Table("notes", metadata, Column("id", Integer, primary_key=True))
    return metadata


def _other_process_wins(metadata: MetaData, path: Path) -> list[str]:
    """Once: create the tables SQLAlchemy is about to create from another connection, after it looked for
    them and before it creates them — the window two processes race in. Returns what it created."""
    created: list[str] = []

    def create_first(_target, _connection, **kw):
        if created:
            return
        other = create_engine(f"sqlite:///{path}")
        with other.begin() as conn:
            for table in kw["tables"]:
                table.create(conn)
                created.append(table.name)
        other.dispose()

    event.listen(metadata, "before_create", create_first)
    return created


def test_a_bare_create_all_loses_the_race_that_create_tables_survives(tmp_path):
    bare, safe = _notes(), _notes()
    lost = _other_process_wins(bare, tmp_path / "bare.db")
    engine = create_engine(f"sqlite:///{tmp_path / 'bare.db'}")
    with pytest.raises(Exception, match="already exists"):
        bare.create_all(engine)
    assert lost == ["notes"]
    engine.dispose()

    won = _other_process_wins(safe, tmp_path / "safe.db")
    engine = create_engine(f"sqlite:///{tmp_path / 'safe.db'}")
    create_tables(safe, engine)  # the loser looks again and takes the table as it is
    assert won == ["notes"] and inspect(engine).get_table_names() == ["notes"]
    create_tables(safe, engine)  # nothing left to do
    engine.dispose()


def test_an_error_other_than_the_race_is_raised_at_once(tmp_path):
    (tmp_path / "dir.db").mkdir()  # a folder, not a database file
    engine = create_engine(f"sqlite:///{tmp_path / 'dir.db'}")
    with pytest.raises(Exception, match="unable to open"):
        create_tables(_notes(), engine)
    engine.dispose()


def _open_shared(root: str, barrier, results) -> None:
    barrier.wait(timeout=120)  # every process at the starting line, then all open the fresh home together
    try:
        home = MemoryHome.resolve(root, None)
        cache = ResponseCache.in_dir(home.cache_dir)
        results.put((cache.count(), len(home.registrations())))
    except Exception as exc:  # the parent's assertion shows it
        results.put(f"{type(exc).__name__}: {exc}")


def test_run_processes_opening_a_fresh_home_together_all_open_it(tmp_path):
    """Four processes released at once on a fresh home: each opens the registry and the response cache."""
    opened = released_together(_open_shared, (str(tmp_path / "home"),), 4)
    assert opened == [(0, 0)] * 4
    dispose_engines()
    engine = create_engine(f"sqlite:///{tmp_path / 'home' / 'cache' / 'llm' / 'responses.db'}")
    assert llm_responses.name in inspect(engine).get_table_names()
    engine.dispose()


def test_a_failed_partition_run_says_which_step_failed_and_why(home, instance, tmp_path):
    """What `materialize_in_parallel` reports back for a failed run: its first failed step and error."""
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_resources.embeddings import EmbeddingsResource
    from tests.conftest import write_json
    from tests.samples import longmemeval_record

    export = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    runner = CorpusRunner(home, instance, resources={"embeddings": EmbeddingsResource(provider="hashing")})
    runner.register(plan_corpora("lme", export))
    export.write_text("{ not json", encoding="utf-8")
    run = runner.materialize("lme", ["messages"])
    assert not run.success
    assert run.failure().startswith("messages: ") and "lme.json" in run.failure(), run.failure()
    assert runner.materialize("lme", ["messages"]).failure() is not None

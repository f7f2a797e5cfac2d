"""The packaged instance's SQLite storage (memory_assets/instance_storage.py): Dagster's files and schema, with
its database connections kept open instead of one per stored event."""

from __future__ import annotations

import contextlib
import gc
import os
import time

import dagster as dg
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Engine

from memory_assets import instance_storage
from memory_assets.instance import local_storage, memory_instance

CHECKS = 6


@dg.asset(check_specs=[dg.AssetCheckSpec(f"contract_{i}", asset="contracted") for i in range(CHECKS)])
def contracted(context):
    context.log.info("stored as an event like any other")
    return dg.MaterializeResult(
        metadata={"rows": 3},
        check_results=[dg.AssetCheckResult(check_name=f"contract_{i}", passed=True) for i in range(CHECKS)],
    )


@pytest.fixture
def sqlite_connects():
    """Every sqlite3 connection any engine opens while the fixture is in use."""
    opened: list[str] = []

    def count(dbapi_connection, _record):
        opened.append(type(dbapi_connection).__module__)

    event.listen(Engine, "connect", count)
    yield opened
    event.remove(Engine, "connect", count)


def _instance(tmp_path, storage: dict | None):
    tmp_path.mkdir(parents=True, exist_ok=True)
    overrides = {"storage": storage} if storage else None
    return dg.instance_for_test(temp_dir=str(tmp_path), overrides=overrides)


def _run(instance) -> dg.ExecuteInProcessResult:
    result = dg.materialize([contracted], instance=instance)
    assert result.success
    return result


def test_the_packaged_instance_uses_it(tmp_path, monkeypatch):
    from memory_core.store.db import MemoryHome

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    with memory_instance(MemoryHome.resolve(tmp_path / "home")) as instance:
        assert isinstance(instance.event_log_storage, instance_storage.KeptOpenSqliteEventLogStorage)
        assert isinstance(instance.run_storage, instance_storage.KeptOpenSqliteRunStorage)


def test_a_run_opens_a_few_connections_not_one_per_event(tmp_path, sqlite_connects):
    with _instance(tmp_path / "kept", local_storage(str(tmp_path / "kept"))) as instance:
        _run(instance)  # creates the run's shard and the tables
        sqlite_connects.clear()
        result = _run(instance)
        events = len(instance.all_logs(result.run_id))
        kept_open = len(sqlite_connects)
    with _instance(tmp_path / "dagster", None) as instance:  # Dagster's own SQLite storage
        _run(instance)
        sqlite_connects.clear()
        _run(instance)
        per_event = len(sqlite_connects)
    assert events >= 3 * CHECKS  # planned, output and evaluation per check
    assert kept_open <= 3  # the new run's shard (the index shard and runs.db stay open)
    assert per_event > events  # what it replaces: a connection per stored event and per query


def test_its_files_are_dagsters_own(tmp_path):
    """Runs it stored read the same from an instance on Dagster's own storage over the same folder (the
    webserver of an older dagster.yaml), and the other way round."""
    with _instance(tmp_path, local_storage(str(tmp_path))) as instance:
        first = _run(instance).run_id
    with _instance(tmp_path, {"sqlite": {"base_dir": str(tmp_path)}}) as instance:
        assert instance.get_run_by_id(first).is_success
        second = _run(instance).run_id
        evaluations = instance.event_log_storage.get_latest_asset_check_execution_by_key(
            [dg.AssetCheckKey(dg.AssetKey("contracted"), "contract_0")]
        )
        assert evaluations
    with _instance(tmp_path, local_storage(str(tmp_path))) as instance:
        runs = {r.run_id: r for r in instance.get_runs()}
        assert set(runs) == {first, second} and all(r.is_success for r in runs.values())
        latest = instance.get_latest_materialization_event(dg.AssetKey("contracted"))
        assert latest.run_id == second and latest.asset_materialization.metadata["rows"].value == 3
        assert len(instance.all_logs(first)) == len(instance.all_logs(second))


def test_at_most_so_many_run_shards_stay_open(tmp_path, monkeypatch):
    monkeypatch.setattr(instance_storage, "MAX_OPEN_SHARDS", 2)
    with _instance(tmp_path, local_storage(str(tmp_path))) as instance:
        run_ids = [_run(instance).run_id for _ in range(4)]
        engines = instance.event_log_storage._engines
        assert len(engines._engines) == 2  # the last run's shard and the index shard
        for run_id in run_ids:  # a closed shard opens again when it is read
            assert any(e.is_dagster_event and e.dagster_event_type.value == "STEP_SUCCESS"
                       for e in instance.all_logs(run_id))  # fmt: skip
        assert len(engines._engines) == 2


def test_a_wipe_closes_what_it_deletes(tmp_path):
    with _instance(tmp_path, local_storage(str(tmp_path))) as instance:
        _run(instance)
        instance.wipe()
        assert not instance.get_runs()
        assert not [
            f for f in os.listdir(tmp_path / "history" / "runs") if f.endswith(".db") and f != "index.db"
        ]
        again = _run(instance).run_id
        assert [r.run_id for r in instance.get_runs()] == [again]


def test_a_forked_child_opens_its_own_connections(tmp_path):
    """The child never uses nor closes the parent's sqlite3 connections (closing one there could checkpoint or
    delete a write-ahead log the parent uses): it keeps them open, unused, and opens its own."""
    with _instance(tmp_path, local_storage(str(tmp_path))) as instance:
        first = _run(instance).run_id
        engines = instance.event_log_storage._engines
        assert engines._engines
        pid = os.fork()
        if pid == 0:
            gc.collect()
            inherited = _open_files(tmp_path)
            ok = not engines._engines and "index.db" in inherited
            ok = (
                ok
                and instance.get_run_by_id(first) is not None
                and len(_open_files(tmp_path)) > len(inherited)
            )
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert engines._engines  # the parent's are untouched
        assert instance.get_run_by_id(first).is_success


def _open_files(folder) -> list[str]:
    """The files of `folder` this process holds open (one entry per descriptor)."""
    out = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(folder)):
                out.append(os.path.basename(target))
    return out


def test_a_watcher_sees_a_runs_events_as_they_are_stored(tmp_path):
    """The UI follows a run's log live (`watch_event_logs`, another process's instance over the same folder):
    the events stay in the shard's write-ahead log while its connection is open, and the watch sees each of
    them, the last included (it is woken once the event's commit is visible, not when the log is written)."""
    storage = local_storage(str(tmp_path))
    with _instance(tmp_path, storage) as writer, _instance(tmp_path, storage) as watcher:
        run = writer.get_run_by_id(_run(writer).run_id)
        seen: list[str] = []
        watcher.watch_event_logs(run.run_id, None, lambda entry, _cursor: seen.append(entry.message or ""))
        time.sleep(0.5)
        for i in range(5):
            writer.report_engine_event(f"live {i}", dagster_run=run)
            time.sleep(0.05)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and sum("live" in m for m in seen) < 5:
            time.sleep(0.1)
        assert [m for m in seen if m.startswith("live")] == [f"live {i}" for i in range(5)]

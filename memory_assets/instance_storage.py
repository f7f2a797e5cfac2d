"""Dagster's SQLite instance storage with its database connections kept open (the packaged dagster.yaml
names it: `storage: custom: memory_assets.instance_storage.KeptOpenSqliteStorage`).

Dagster's SQLite event log and run storages create a new SQLAlchemy engine for every event they store and
every query they answer: a new sqlite3 connection that opens the file and reads its schema, with an empty
statement cache, then closed. A run stores ~200 events (an unchanged corpus rebuild: 14 steps, 34 checks
at three events each), and that connection churn was most of what an unchanged rebuild cost
(bench_build_floor, issue 19). These storages are Dagster's own — the same files, schema, migrations and
locking — with one engine per database file, kept for the process: at most `MAX_OPEN_SHARDS` run shards
open at once (the webserver reads many runs), none used across a fork, all closed before a wipe.

Two consequences of a connection that stays open, handled here:
- A run shard's new events stay in its write-ahead log (`<run>.db-wal`) instead of being checkpointed into
  `<run>.db` when the last connection closes, and Dagster's live run-log watch (the UI's subscription) waits
  for `<run>.db` to change. So each stored event touches `<run>.db` once its transaction has committed (an
  inotify attribute event, which the watch takes as a change). The `-wal` file itself is no signal: sqlite
  writes it before the commit is visible to readers (the wal-index is updated after), so a watch woken by
  it could read too early and then miss a run's last event.
- `dagster run wipe` in another process deletes shard files this process may hold open: its events then go
  to the deleted files. Stop the UI and daemon before wiping a SQLite instance (as for any SQLite tool).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine

MAX_OPEN_SHARDS = 16  # run-shard databases a process keeps open (LRU); the index shard counts as one


class _Engines:
    """Engines by connection string, least recently used closed first. An engine's pool (SQLAlchemy's
    QueuePool for a file database, connections usable from any thread) keeps its sqlite3 connections open."""

    def __init__(self, limit: int):
        self.limit = limit
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()
        _KEPT.add(self)

    def get(self, conn_string: str) -> Engine:
        with self._lock:
            engine = self._engines.get(conn_string)
            if engine is None:
                engine = (
                    create_engine(  # as many connections as threads ask for, as Dagster's NullPool allowed
                        conn_string, max_overflow=-1, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS}
                    )
                )
                self._engines[conn_string] = engine
                while len(self._engines) > self.limit:
                    self._engines.popitem(last=False)[1].dispose()
            else:
                self._engines.move_to_end(conn_string)
            return engine

    def close(self, close_connections: bool = True) -> None:
        with self._lock:
            for engine in self._engines.values():
                engine.dispose(close=close_connections)
            self._engines.clear()


_KEPT: weakref.WeakSet[_Engines] = weakref.WeakSet()
# a forked child's inherited engines: never used and never closed, since closing a sqlite3 connection in the
# child (its file locks are not inherited) could checkpoint or delete a write-ahead log the parent still uses
_INHERITED: list[Engine] = []


def _forget_in_child() -> None:
    """A forked child opens its own connections. Its lock is new: another thread of the parent may have held
    the old one at the fork."""
    for engines in list(_KEPT):
        engines._lock = threading.Lock()
        _INHERITED.extend(engines._engines.values())
        engines._engines = OrderedDict()


os.register_at_fork(after_in_child=_forget_in_child)


class KeptOpenSqliteEventLogStorage(SqliteEventLogStorage):
    """`SqliteEventLogStorage` (one database per run plus the index shard) with its engines kept open."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self._engines = _Engines(MAX_OPEN_SHARDS)
        super().__init__(base_dir, inst_data=inst_data)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        # as Dagster's: under the storage's lock, a shard's database created on its first use
        with self._db_lock:
            engine = self._engines.get(self.conn_string_for_shard(shard))
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        # asked on every check evaluation stored (supports_asset_checks)
        engine = self._engines.get(self.conn_string_for_shard(INDEX_SHARD_NAME))
        with engine.connect() as conn:
            return bool(engine.dialect.has_table(conn, table_name))

    def wipe(self) -> None:
        with self._db_lock:
            self._engines.close()  # the run shards' files are deleted next
        super().wipe()

    def store_event(self, event: EventLogEntry) -> None:
        super().store_event(event)
        # wakes live watchers of the run only now that the event is visible to their reads
        with contextlib.suppress(FileNotFoundError):
            os.utime(self.path_for_shard(event.run_id))

    def dispose(self) -> None:
        super().dispose()  # the watch thread first: it reads through the engines
        self._engines.close()


class KeptOpenSqliteRunStorage(SqliteRunStorage):
    """`SqliteRunStorage` (runs.db) with its engine kept open."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None):
        self._engines = _Engines(1)
        super().__init__(conn_string, inst_data=inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engines.get(self._conn_string).connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        self._engines.close()
        super().dispose()


class KeptOpenSqliteStorage(DagsterSqliteStorage):
    """The instance's SQLite storage (`storage: sqlite:`, same folders under `base_dir`) with the run and event
    log storages above; schedules as Dagster keeps them (they are read once per tick, not per event)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        self.base_dir = base_dir
        self._run_storage = KeptOpenSqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = KeptOpenSqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data, config_value):  # ty: ignore[invalid-method-override]
        return cls.from_local(inst_data=inst_data, **config_value)

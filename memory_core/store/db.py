"""Engines for a corpus's stores, the corpus registry, and the one-writer-per-corpus lock.

Default layout under the memory home (`MEMORY_OS_HOME`, default `~/.memory_os`):

    registry.db                     registered corpora (name, format, input path)
    cache/                          caches shared by every corpus (embeddings, LLM responses)
    corpora/<name>/source.db        conversations, messages, dead letters
    corpora/<name>/staging.db       segments ... fact states (the pipeline's state)
    corpora/<name>/reflective.db    user reactions (own retention, purgeable)
    corpora/<name>/graph/           embedded graph store
    corpora/<name>/indexes/         FAISS indexes
    corpora/<name>/.memo/           results kept while their tables stand (memory_core.store.memo)

A SQLAlchemy URL template (`{corpus}` and `{store}` placeholders) points the same tables elsewhere, e.g.
`postgresql+psycopg://user@host/memory_{corpus}_{store}`: on Postgres a store's database is created on its
first write (the role needs CREATEDB) and a read path finds a missing one empty, as with SQLite files.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Connection,
    DateTime,
    Engine,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    make_url,
    select,
    text,
)
from sqlalchemy import exc as sqlalchemy_exc

from memory_core.errors import CorpusLockedError, InputError
from memory_core.processes import ProcessIdentity
from memory_core.settings import memory_home_path
from memory_core.store.schema import METADATA_BY_STORE
from memory_core.store.upgrade import create_tables, ensure_columns, ensure_indexes, retire_constraints
from memory_core.store.version import read_version, track_versions

CORPUS_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,199}$")
STORES = ("source", "staging", "reflective")

registry_metadata = MetaData()
corpora_registry = Table(
    "corpora",
    registry_metadata,
    Column("name", String(200), primary_key=True),
    Column("source_format", String(32), nullable=False),
    Column("path", Text, nullable=False),
    Column("options", JSON, nullable=False),  # e.g. {"record_id": "conv-26"}
    Column("registered_at", DateTime, nullable=False),
)

_engines: dict[str, Engine] = {}
_engines_lock = threading.Lock()
_server_databases: set[str] = set()  # server database URLs known to exist (databases are never dropped here)
# SQLite files whose schema this process has brought up to date, as (engine, device, inode): every stage
# opens its corpus anew, and looking at ~40 tables' columns each time was ~7 % of an unchanged rebuild; a
# file deleted and created again (a corpus removed and added) is another inode, and is checked again. Not
# seen: a file overwritten in place (`cp backup.db staging.db`) under a running process, whose pooled
# connections are stale then anyway (restore a store with the processes that use it stopped)
_schema_checked: set[tuple[tuple[int, int, int], bool]] = set()  # ((engine, device, inode), by a writer)


def utcnow() -> datetime:
    """Naive UTC: the convention of every stored time."""
    return datetime.now(UTC).replace(tzinfo=None)


def default_home() -> Path:
    return memory_home_path()


def validate_corpus_name(name: str) -> str:
    if not CORPUS_NAME_RE.match(name or ""):
        raise InputError(
            f"invalid corpus name {name!r}: use letters, digits, '_', '-', '.', starting with a letter or digit"
        )
    return name


def _sqlite_pragmas(dbapi_conn, _record):
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=30000")
    cur.execute("PRAGMA cache_size=-65536")  # 64 MiB: bulk inserts into random-uuid B-trees stay in memory
    cur.execute("PRAGMA temp_store=MEMORY")
    cur.close()


def get_engine(url: str) -> Engine:
    """One engine per URL per process (SQLite: WAL, foreign keys on)."""
    with _engines_lock:
        engine = _engines.get(url)
        if engine is None:
            # hide_parameters: a failing statement's error (and so a run's stored traceback) never carries
            # its parameters - message texts - only the SQL
            if url.startswith("sqlite"):
                engine = create_engine(url, connect_args={"check_same_thread": False}, hide_parameters=True)
                event.listen(engine, "connect", _sqlite_pragmas)
            else:
                engine = create_engine(url, pool_pre_ping=True, hide_parameters=True)
            _engines[url] = engine
        return engine


def dispose_engines() -> None:
    with _engines_lock:
        for engine in _engines.values():
            engine.dispose()
        _engines.clear()
        _server_databases.clear()
        _schema_checked.clear()


@dataclass(frozen=True)
class MemoryHome:
    """The memory home and how corpus stores are addressed."""

    root: Path
    url_template: str | None = None

    @classmethod
    def resolve(cls, home: str | os.PathLike | None = None, url_template: str | None = None) -> MemoryHome:
        root = Path(home).expanduser() if home else default_home()
        return cls(root=root.resolve(), url_template=url_template or None)

    @property
    def cache_dir(self) -> Path:
        path = self.root / "cache"
        path.mkdir(parents=True, exist_ok=True)
        return path

    def registry_engine(self) -> Engine:
        self.root.mkdir(parents=True, exist_ok=True)
        engine = get_engine(f"sqlite:///{self.root / 'registry.db'}")
        create_tables(registry_metadata, engine)
        return engine

    def corpus(self, name: str, readonly: bool = False) -> CorpusStore:
        """The stores of corpus `name`; `readonly` for read paths (see `CorpusStore.read_only`)."""
        return CorpusStore(self, validate_corpus_name(name), readonly=readonly)

    # registry ---------------------------------------------------------------------------------
    def register(self, name: str, source_format: str, path: str, options: dict | None = None) -> None:
        validate_corpus_name(name)
        row = dict(
            name=name,
            source_format=source_format,
            path=str(path),
            options=options or {},
            registered_at=utcnow(),
        )
        engine = self.registry_engine()
        with engine.begin() as conn:
            conn.execute(corpora_registry.delete().where(corpora_registry.c.name == name))
            conn.execute(corpora_registry.insert().values(**row))

    def registration(self, name: str) -> dict | None:
        with self.registry_engine().connect() as conn:
            row = (
                conn.execute(select(corpora_registry).where(corpora_registry.c.name == name))
                .mappings()
                .first()
            )
        return dict(row) if row else None

    def registrations(self) -> list[dict]:
        with self.registry_engine().connect() as conn:
            rows = conn.execute(select(corpora_registry).order_by(corpora_registry.c.name)).mappings().all()
        return [dict(r) for r in rows]

    def unregister(self, name: str) -> None:
        with self.registry_engine().begin() as conn:
            conn.execute(corpora_registry.delete().where(corpora_registry.c.name == name))


class CorpusStore:
    """Engines and file locations of one corpus. Creating it creates nothing; `engine()` creates the schema.

    A read-only store (`read_only()`, what the read side and `stats` use) never creates a folder or a
    database: a store that does not exist yet reads as an empty one (an in-memory twin of its schema), and
    `path()` creates sub-folders only inside an existing corpus folder.
    """

    def __init__(self, home: MemoryHome, name: str, readonly: bool = False):
        self.home = home
        self.name = name
        self.dir = home.root / "corpora" / name
        self.readonly = readonly
        self._ready: set[str] = set()
        self._empty: dict[str, Engine] = {}
        self._versions: dict[str, tuple[tuple, tuple[str, int]]] = {}  # store → (file stamps, version)

    def read_only(self) -> CorpusStore:
        return self if self.readonly else CorpusStore(self.home, self.name, readonly=True)

    def url(self, store: str) -> str:
        if store not in STORES:
            raise ValueError(f"unknown store {store!r}")
        if self.home.url_template:
            return self.home.url_template.format(corpus=self.name, store=store)
        return f"sqlite:///{self.dir / (store + '.db')}"

    def engine(self, store: str) -> Engine:
        url = self.url(store)
        if store not in self._ready:
            if url.startswith("sqlite"):
                if self.readonly and not (self.dir / f"{store}.db").exists():
                    return self._empty_engine(store)
                self.dir.mkdir(parents=True, exist_ok=True)
            elif not server_database(url, create=not self.readonly):
                return self._empty_engine(store)
        engine = get_engine(url)
        track_versions(engine)  # every time: after dispose_engines the same URL gets a new engine
        if store not in self._ready:
            identity = self._schema_identity(engine, url)
            # a writer's check covers a reader's; a reader's (no DDL for speed or leniency) not a writer's
            looks = [(identity, True)] if not self.readonly else [(identity, True), (identity, False)]
            if identity is None or not any(look in _schema_checked for look in looks):
                create_tables(METADATA_BY_STORE[store], engine)
                ensure_columns(engine, METADATA_BY_STORE[store], f"corpus {self.name!r} ({store})")
                if not self.readonly:  # what these add is speed and leniency: a reader writes no DDL for them
                    retire_constraints(engine, METADATA_BY_STORE[store])
                    ensure_indexes(engine, METADATA_BY_STORE[store])
                identity = self._schema_identity(engine, url)  # (the file exists now)
                if identity is not None:
                    _schema_checked.add((identity, not self.readonly))
            self._ready.add(store)
        return engine

    @staticmethod
    def _schema_identity(engine: Engine, url: str) -> tuple[int, int, int] | None:
        """(engine, device, inode) of the store's SQLite file; None for a server database or no file yet."""
        database = engine.url.database if url.startswith("sqlite") else None
        if not database or database == ":memory:":
            return None
        try:
            st = os.stat(database)
        except FileNotFoundError:
            return None
        return id(engine), st.st_dev, st.st_ino

    def version(self, store: str) -> tuple[str, int]:
        """The store's version stamp (memory_core.store.version): changes with every committed write.

        On SQLite the row is read again only when the database or its WAL file changed (every commit
        changes one of them; a stat costs a hundredth of the query): the files are looked at first, so a
        commit landing between the look and the read is seen by the next call."""
        url = self.url(store)
        if not url.startswith("sqlite"):
            return read_version(self.engine(store), store)
        files = file_stamps([self.dir / f"{store}.db", self.dir / f"{store}.db-wal"])
        cached = self._versions.get(store)
        if cached is not None and cached[0] == files:
            return cached[1]
        stamp = read_version(self.engine(store), store)
        self._versions[store] = (files, stamp)
        return stamp

    def _empty_engine(self, store: str) -> Engine:
        """An empty in-memory database with the store's schema: what a store not built yet reads as."""
        engine = self._empty.get(store)
        if engine is None:
            from sqlalchemy.pool import StaticPool

            engine = create_engine(
                "sqlite://", connect_args={"check_same_thread": False}, poolclass=StaticPool
            )
            METADATA_BY_STORE[store].create_all(engine)
            self._empty[store] = engine
        return engine

    @property
    def source(self) -> Engine:
        return self.engine("source")

    @property
    def staging(self) -> Engine:
        return self.engine("staging")

    @property
    def reflective(self) -> Engine:
        return self.engine("reflective")

    def path(self, *parts: str) -> Path:
        """A file location inside the corpus folder (graph, indexes, reports); parent created (read-only:
        only inside an existing corpus folder)."""
        path = self.dir.joinpath(*parts)
        if not self.readonly or self.dir.is_dir():
            path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def exists(self) -> bool:
        return (self.dir / "source.db").exists() or bool(self.home.url_template)

    @property
    def lock_path(self) -> Path:
        return self.dir / ".write.lock"

    @contextlib.contextmanager
    def write_lock(self, timeout_s: float = 0.0) -> Iterator[None]:
        """One writer per corpus: an exclusive advisory lock on a file in the corpus folder. The holder
        writes who it is into the file and clears it on release (`lock_holder` reads it); the kernel
        releases the lock when the holder dies, however it dies."""
        lock_path = self.path(".write.lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + timeout_s
        locked = False
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    locked = True
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        holder = self.lock_holder()
                        raise CorpusLockedError(
                            f"corpus {self.name!r} is being written by another run"
                            f"{f' (pid {holder.pid} on {holder.host})' if holder else ''} (lock {lock_path})"
                        ) from None
                    time.sleep(0.2)
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(ProcessIdentity.current().as_dict()).encode(), 0)
            yield
        finally:
            with contextlib.suppress(OSError):
                if locked:
                    os.ftruncate(fd, 0)
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def lock_holder(self) -> ProcessIdentity | None:
        """The process holding the corpus's write lock, or None when nobody does. Reads the name the holder
        wrote, without taking the lock (a probe could make a writer that does not wait fail); only when
        that process is gone is the lock itself tried (a child may have inherited it). Creates nothing."""
        try:
            with open(self.lock_path, "rb") as fp:
                who = ProcessIdentity.from_dict(json.loads(fp.read(4096) or b"null"))
        except (OSError, ValueError):
            return None
        if who is None or who.alive() is not False:
            return who
        fd = os.open(self.lock_path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return who  # its lock lives on in a process that inherited it
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return None
        finally:
            os.close(fd)


def file_stamps(paths: list[Path]) -> tuple:
    """(path, mtime_ns, size) of each file (None, None when it is absent): equal stamps, untouched files."""
    out = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((str(path), st.st_mtime_ns, st.st_size))
        except FileNotFoundError:
            out.append((str(path), None, None))
    return tuple(out)


def server_database(url: str, create: bool) -> bool:
    """Whether the database a server URL names exists; with `create`, create it when it does not (the
    role needs CREATEDB), so a corpus on Postgres gets its databases on its first write, as a SQLite corpus
    gets its files. Asks the server's maintenance database `postgres`; other servers are taken as they are."""
    target = make_url(url)
    if target.get_backend_name() != "postgresql" or not target.database or url in _server_databases:
        return True
    maintenance = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
    try:
        with maintenance.connect() as conn:
            exists = conn.execute(
                text("SELECT 1 FROM pg_database WHERE datname = :name"), {"name": target.database}
            ).first()
            if exists or not create:
                if exists:
                    _server_databases.add(url)
                return bool(exists)
            quoted = conn.dialect.identifier_preparer.quote_identifier(target.database)
            try:
                conn.exec_driver_sql(f"CREATE DATABASE {quoted}")
            except (sqlalchemy_exc.ProgrammingError, sqlalchemy_exc.IntegrityError) as err:
                # created meanwhile by a parallel run: "already exists", or a duplicate key in the catalogue
                # when both CREATEs ran at the same moment
                if "already exists" not in str(err):
                    raise
            _server_databases.add(url)
            return True
    finally:
        maintenance.dispose()


_IN_USE = "55006"  # Postgres: object_in_use — a session FORCE cannot end still holds the database


def drop_database(conn, name: str, attempts: int = 10) -> str | None:
    """DROP DATABASE … WITH (FORCE) on an AUTOCOMMIT connection to the server's maintenance database,
    retried while the database is in use: FORCE cannot end a superuser's backend (an autovacuum worker),
    which leaves within moments. None when it is gone, else why not (any other error at once)."""
    quoted = conn.dialect.identifier_preparer.quote_identifier(name)
    for attempt in range(attempts):
        try:
            conn.exec_driver_sql(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")
            return None
        except sqlalchemy_exc.DBAPIError as err:
            code = getattr(err.orig, "sqlstate", None) or getattr(err.orig, "pgcode", None)  # psycopg 3 / 2
            if code != _IN_USE:
                return f"{name}: {str(err.orig).strip().splitlines()[0]}"
            time.sleep(0.5 * (attempt + 1))
    return f"{name}: still in use by another session"


def drop_server_databases(urls: list[str]) -> list[str]:
    """Drop the Postgres databases `urls` name (a corpus's stores on a server; other servers and SQLite are
    left to their files); why each that could not be dropped was not."""
    failed = []
    for url in urls:
        target = make_url(url)
        if target.get_backend_name() != "postgresql" or not target.database:
            continue
        _server_databases.discard(url)
        maintenance = create_engine(target.set(database="postgres"), isolation_level="AUTOCOMMIT")
        try:
            with maintenance.connect() as conn:
                why = drop_database(conn, target.database)
                if why:
                    failed.append(why)
        finally:
            maintenance.dispose()
    return failed


def wipe_free_pages(engine: Engine) -> None:
    """After a purge: no deleted content left in a SQLite file (its WAL checkpointed and truncated, the
    file vacuumed). Nothing to do for a server database."""
    if engine.dialect.name != "sqlite":
        return
    with engine.connect() as conn:
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.exec_driver_sql("VACUUM")
        conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


def _sqlite_column(kind: str, values: list) -> list:
    """One column's values as SQLAlchemy's types store them on SQLite (a comprehension per column: a
    function call per value costs more than the insert itself)."""
    if kind == "datetime":  # SQLAlchemy's SQLite DateTime format
        return [v.isoformat(sep=" ", timespec="microseconds") if v is not None else None for v in values]
    if kind == "json":
        dumps = json.dumps
        return [dumps(v) if v is not None else None for v in values]
    if kind == "bool":
        return [int(v) if v is not None else None for v in values]
    return values


def bulk_insert(conn: Connection, table: Table, rows: list[dict]) -> None:
    """Insert many rows. On SQLite, straight through the driver's executemany with values stored exactly as
    SQLAlchemy's types store them (about 3× faster on 100k rows); elsewhere a Core executemany."""
    if not rows:
        return
    if conn.dialect.name != "sqlite":
        conn.execute(table.insert(), rows)
        return
    cols = [c for c in table.columns if c.name in rows[0]]
    kinds = []
    for c in cols:
        if isinstance(c.type, DateTime):
            kinds.append("datetime")
        elif isinstance(c.type, JSON):
            kinds.append("json")
        elif isinstance(c.type, Boolean):
            kinds.append("bool")
        else:
            kinds.append("")
    sql = (
        f"INSERT INTO {table.name} ({', '.join(c.name for c in cols)}) VALUES ({', '.join('?' * len(cols))})"
    )
    columns = [_sqlite_column(kind, [r[c.name] for r in rows]) for c, kind in zip(cols, kinds, strict=True)]
    conn.exec_driver_sql(sql, list(zip(*columns, strict=True)))

"""A computation's last result, kept with the write counters of the tables it read (memory_core.store.version).

A contract or a stage that reads whole tables every run (the ActionLog replay: 9.6 s of a 30k-message
corpus, twice a run; the graph export: ~2 s of a 10k-message corpus's unchanged rebuild) gives the same
result while neither those tables nor the code that computes it changed. Its result is kept in a small JSON
file in the corpus folder under a key of each store's epoch, each table's counter and a digest of the code's
modules, and reused while the key stands; a result is kept only when no counter moved while it was computed.
A store opened read-only, or a file that cannot be read or written, only costs the computation.

The counters see every write made through Memory OS's engines, not one made beside them (the sqlite3 shell
editing a concept in place): a kept result is therefore trusted for at most `max_age_s` (a day by default),
and a contract keeps only a passing result (`keep_if`), so a failure is always judged afresh. The code is
read once per process (what the process runs), with the versions of the libraries that parse the rows.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import logging
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from types import ModuleType

from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
from memory_core.store.version import read_version, table_version

log = logging.getLogger(__name__)
MEMO_DIR = ".memo"
MAX_AGE_S = 24 * 3600.0
Tables = Sequence[tuple[str, str]]  # (store, table) pairs: ("staging", "action_log")


_LIBRARIES = ("sqlalchemy", "pydantic", "numpy", "PyStemmer")  # parse rows, compute figures, tokenise


def code_digest(modules: Sequence[ModuleType], *settings: object) -> str:
    """sha256 of the modules' source (a package: each of its modules), the versions of `_LIBRARIES` and
    `settings`: a changed computation is a new key. A source that cannot be read is a key of this process
    alone (no other process reuses what it keeps)."""
    digest = hashlib.sha256()
    for module in modules:
        path = Path(inspect.getfile(module))
        for file in sorted(path.parent.rglob("*.py")) if path.name == "__init__.py" else [path]:
            digest.update(_source_digest(str(file)))
    digest.update(repr((_library_versions(), settings)).encode())
    return digest.hexdigest()


@functools.cache
def _source_digest(path: str) -> bytes:
    """A module file's digest, read once per process (the code this process runs, not a newer checkout)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).digest()
    except OSError:
        return uuid.uuid4().bytes


@functools.cache
def _library_versions() -> tuple[str, ...]:
    return tuple(metadata.version(name) for name in _LIBRARIES)


def tables_key(store: CorpusStore, tables: Tables, code: str) -> str:
    """The key of `code` over `tables` as they stand now: each store's epoch and each table's counter."""
    parts = [code]
    for store_name in sorted({s for s, _ in tables}):
        engine = store.engine(store_name)
        epoch, _ = read_version(engine, store_name)
        with engine.connect() as conn:
            parts.append(f"{store_name}@{epoch}")
            parts += [f"{t}={table_version(conn, t)}" for s, t in tables if s == store_name]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


def file_identity(path: Path) -> str | None:
    """inode, mtime and size of a file a computation wrote (None: there is none): a result that names its
    output files stands only while they are the files it wrote."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"


def _path(store: CorpusStore, name: str) -> Path:
    return store.dir / MEMO_DIR / f"{name}.json"


def kept(store: CorpusStore, name: str, key: str, max_age_s: float = MAX_AGE_S) -> dict | None:
    """The result kept under `key`, at most `max_age_s` old (None: none, another key, too old, unreadable)."""
    try:
        memo = json.loads(_path(store, name).read_text())
        if memo.get("key") == key and 0 <= time.time() - memo["at"] <= max_age_s:
            return memo["result"] if isinstance(memo["result"], dict) else None
    except FileNotFoundError:
        pass  # nothing kept yet
    except (OSError, ValueError, TypeError, AttributeError, KeyError) as err:
        log.info("the kept result of %s is unreadable (%s): computed again", name, err)
    return None


def keep(store: CorpusStore, name: str, key: str, result: dict) -> None:
    """Keep `result` under `key`, whole or not at all (a read-only store keeps nothing)."""
    if store.readonly:
        return
    path = _path(store, name)
    partial = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, partial = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as fp:
            json.dump({"key": key, "at": time.time(), "result": result}, fp)
        os.replace(partial, path)
        partial = None
    except (OSError, TypeError, ValueError) as err:  # (not JSON-able: a bug, but only a cost)
        log.warning("the result of %s was not kept (%s)", name, err)
    finally:
        if partial is not None:
            Path(partial).unlink(missing_ok=True)


def kept_or_computed(
    store: CorpusStore,
    name: str,
    tables: Tables,
    code: str,
    compute: Callable[[], dict],
    max_age_s: float = MAX_AGE_S,
    keep_if: Callable[[dict], bool] = lambda result: True,
) -> tuple[dict, bool]:
    """(`compute()`'s JSON-able result, False), or (the one kept under the same key, at most `max_age_s`
    old, True). A result is kept only if `keep_if` says so (a contract: when it passed)."""
    key = tables_key(store, tables, code)
    result = kept(store, name, key, max_age_s)
    if result is not None:
        return result, True
    result = compute()
    if keep_if(result) and tables_key(store, tables, code) == key:  # nothing it read moved meanwhile
        keep(store, name, key, result)
    return result, False


def kept_check(
    store: CorpusStore, name: str, tables: Tables, code: str, check: Callable[[], CheckResult]
) -> CheckResult:
    """A contract's passing result while what it read stands (`checked_now` in its figures says whether it
    was evaluated in this call); a failure is never kept, so it is judged afresh every time."""
    figures, kept_result = kept_or_computed(
        store,
        name,
        tables,
        code,
        lambda: {"passed": (result := check()).passed, "figures": result.figures},
        keep_if=lambda r: r["passed"],
    )
    return CheckResult(figures["passed"], {**figures["figures"], "checked_now": not kept_result})

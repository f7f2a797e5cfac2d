"""A contract's last result, kept with the write counters of the tables it read (memory_core.store.version).

A contract that reads a whole table every time (the ActionLog replay: ~0.2 s of a 500-turn haystack's
unchanged rebuild, 9.6 s on a 30k-message corpus, twice a run) gives the same result while neither those
tables nor the code that computes it changed. Its result is kept in a small JSON file in the corpus folder
under a key of the store's epoch, each table's counter and a digest of the code's modules, and reused while
the key stands; a result is kept only when no counter moved while it was computed. A store opened
read-only, or a file that cannot be read or written, only costs the computation.

The counters see every write made through Memory OS's engines, not one made beside them (the sqlite3 shell
editing a concept in place): a kept result is therefore trusted for at most `max_age_s` (a day by default,
so a nightly gardener run computes it afresh).
"""

from __future__ import annotations

import hashlib
import inspect
import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType

from memory_core.store.db import CorpusStore
from memory_core.store.version import read_version, table_version

log = logging.getLogger(__name__)
MEMO_DIR = ".memo"
MAX_AGE_S = 24 * 3600.0


def code_digest(modules: Sequence[ModuleType]) -> str:
    """sha256 of the modules' source files (a changed computation is a new key)."""
    digest = hashlib.sha256()
    for module in modules:
        digest.update(Path(inspect.getfile(module)).read_bytes())
    return digest.hexdigest()


def tables_key(store: CorpusStore, store_name: str, tables: Sequence[str], code: str) -> str:
    engine = store.engine(store_name)
    epoch, _ = read_version(engine, store_name)
    with engine.connect() as conn:
        versions = [f"{t}={table_version(conn, t)}" for t in tables]
    return hashlib.sha256("\x1f".join([store_name, epoch, code, *versions]).encode()).hexdigest()


def kept_or_computed(
    store: CorpusStore,
    name: str,
    store_name: str,
    tables: Sequence[str],
    code: str,
    compute: Callable[[], dict],
    max_age_s: float = MAX_AGE_S,
) -> tuple[dict, bool]:
    """(`compute()`'s JSON-able result, False), or (the one kept under the same key, at most `max_age_s`
    old, True)."""
    path = store.dir / MEMO_DIR / f"{name}.json"
    key = tables_key(store, store_name, tables, code)
    try:
        kept = json.loads(path.read_text())
        if kept.get("key") == key and 0 <= time.time() - kept["at"] <= max_age_s:
            return kept["result"], True
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        pass  # none kept, or unreadable: computed
    result = compute()
    if not store.readonly and tables_key(store, store_name, tables, code) == key:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_text(json.dumps({"key": key, "at": time.time(), "result": result}))
            partial.replace(path)  # whole or not at all
        except OSError as err:
            log.info("the result of %s was not kept (%s)", name, err)
    return result, False

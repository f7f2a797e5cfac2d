"""A cache file shared by every corpus of a memory home: rows keyed by (model, sha256 of a text).

The embedding cache (vectors) and the parse cache (parses) are two tables of this shape. One SQLite file
each, WAL, a busy timeout, `INSERT OR IGNORE` (the first writer of a key wins; both computed the same value
anyway), so concurrent runs of different corpora share it safely. Writers take the write lock before they
read anything (`BEGIN IMMEDIATE`): WAL refuses to upgrade a read snapshot another process's commit made
stale.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

from memory_core.retrying import again_while

LOOKUP_CHUNK = 500  # keys per SELECT ... IN (...): under SQLite's bound-parameter limit


def when_unlocked(statement):
    """Run `statement`, again after a short wait while SQLite says "database is locked" without waiting itself
    (a fresh file's journal-mode switch racing another process's: several run processes open the one cache)."""
    return again_while(statement, (sqlite3.OperationalError,), ("database is locked",))


class KeyedCacheFile:
    """Table `table` of (model, text_sha256, *value columns) in the SQLite file at `path`."""

    def __init__(self, path: str | Path, table: str, value_columns: str):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.table = table
        self._width = 2 + len(value_columns.split(","))
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), timeout=60, check_same_thread=False)
        when_unlocked(lambda: self._conn.execute("PRAGMA journal_mode=WAL"))
        self._conn.execute("PRAGMA synchronous=NORMAL")
        when_unlocked(
            lambda: self._conn.execute(
                f"CREATE TABLE IF NOT EXISTS {table} (model TEXT NOT NULL, text_sha256 TEXT NOT NULL, "
                f"{value_columns}, PRIMARY KEY (model, text_sha256)) WITHOUT ROWID"
            )
        )
        self._conn.commit()

    def select_many(self, model: str, hashes: Sequence[str], columns: str) -> list[tuple]:
        """(text_sha256, *columns) of the keys of `hashes` the file holds for `model`."""
        unique = list(dict.fromkeys(hashes))
        rows: list[tuple] = []
        with self._lock:
            for i in range(0, len(unique), LOOKUP_CHUNK):
                chunk = unique[i : i + LOOKUP_CHUNK]
                marks = ",".join("?" * len(chunk))
                rows += self._conn.execute(
                    f"SELECT text_sha256, {columns} FROM {self.table} WHERE model = ? AND text_sha256 IN ({marks})",
                    [model, *chunk],
                ).fetchall()
        return rows

    def insert_many(self, rows: Sequence[tuple]) -> None:
        """Rows of (model, text_sha256, *values); a key already held keeps its value."""
        marks = ",".join("?" * self._width)
        with self._lock:
            when_unlocked(lambda: self._write(f"INSERT OR IGNORE INTO {self.table} VALUES ({marks})", rows))

    def _write(self, statement: str, rows: Sequence[tuple]) -> None:
        try:
            self._conn.execute("BEGIN IMMEDIATE")
            self._conn.executemany(statement, rows)
            self._conn.commit()
        except BaseException:
            self._conn.rollback()
            raise

    def count(self, model: str | None = None) -> int:
        with self._lock:
            if model is None:
                return self._conn.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
            return self._conn.execute(
                f"SELECT count(*) FROM {self.table} WHERE model = ?", [model]
            ).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()

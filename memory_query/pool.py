"""Corpus readers for the callers that query: a `ReaderPool` belongs to one long-lived caller (the MCP
server, an eval run, a CLI command asking several questions) and keeps each corpus's loaded memory between
its queries; a one-shot query without a pool reads through a short-lived reader (`reading`)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager

from memory_core.store.db import CorpusStore, MemoryHome
from memory_query.reader import CorpusReader

MAX_OPEN_READERS = 16  # corpora a pool keeps loaded; past it the least recently used one is closed


def open_store(corpus: str | CorpusStore, home: MemoryHome | str | None = None) -> CorpusStore:
    if isinstance(corpus, CorpusStore):
        return corpus
    # a read path never creates a store: an unknown or unbuilt name reads as an empty memory
    return (home if isinstance(home, MemoryHome) else MemoryHome.resolve(home)).corpus(corpus, readonly=True)


class ReaderPool:
    """One reader per corpus, loaded once and kept while its files are unchanged (see `CorpusReader`)."""

    def __init__(self, home: MemoryHome | str | None = None, capacity: int = MAX_OPEN_READERS):
        self.home = home
        self.capacity = capacity
        self._readers: OrderedDict[tuple[str, str], CorpusReader] = OrderedDict()
        self._lock = threading.Lock()

    def reader(self, corpus: str | CorpusStore, home: MemoryHome | str | None = None) -> CorpusReader:
        """The reader of `corpus` (a name under `home`, default the pool's home, or a store)."""
        store = open_store(corpus, home if home is not None else self.home)
        key = (str(store.home.root), store.name)
        with self._lock:
            reader = self._readers.get(key)
            if reader is None or reader.store.home != store.home:
                reader = self._readers[key] = CorpusReader(store)
            self._readers.move_to_end(key)
            while len(self._readers) > self.capacity:
                _, evicted = self._readers.popitem(last=False)
                evicted.close()
        return reader

    def warm_in_background(self, corpora: list[str]) -> threading.Thread:
        """Load each corpus's memory in a daemon thread (`CorpusReader.warm`), so a server's first query
        does not pay for it; a query arriving meanwhile waits only for the part it needs (the reader's lock)."""

        def warm() -> None:
            for corpus in corpora:
                try:
                    self.reader(corpus).warm()
                except Exception:  # noqa: BLE001 — warming is an optimisation: the query reports real errors
                    continue

        thread = threading.Thread(target=warm, name="reader-pool-warm", daemon=True)
        thread.start()
        return thread

    def __len__(self) -> int:
        return len(self._readers)

    def close(self) -> None:
        with self._lock:
            while self._readers:
                self._readers.popitem()[1].close()

    def __enter__(self) -> ReaderPool:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


@contextmanager
def reading(
    corpus: str | CorpusStore, home: MemoryHome | str | None = None, pool: ReaderPool | None = None
) -> Iterator[CorpusReader]:
    """The pool's reader of `corpus`, or without a pool one that is closed when the block ends."""
    if pool is not None:
        yield pool.reader(corpus, home)
        return
    reader = CorpusReader(open_store(corpus, home))
    try:
        yield reader
    finally:
        reader.close()

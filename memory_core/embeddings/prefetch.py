"""Vectors a later stage will ask for, embedded ahead on a daemon thread while the stages before it run.

The concept loop keeps one core busy and the local embedder runs one torch thread, so a build leaves a core
idle for most of its longest stage. A prefetch embeds, on that core and through the shared embedding cache,
the very calls a later stage will make on a first build (the topics stage's segment chunks, the messages
family's own-text turns), last first: the stage takes them from the first, finds them cached, and the two
meet in the middle. Each call is stored whole or not at all. On a rebuild a stage may ask for a subset,
which the cache answers all the same; the vectors equal the stage's own but for float noise (~1e-7).

A failed prefetch costs nothing but its time: whatever it did not store, the stage embeds itself. Calls come
from an iterable that the thread consumes, so a caller can leave costly work (a query over every message) to
the thread. At process exit the thread stops between calls.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Iterable

from memory_core.embeddings.base import Embedder

log = logging.getLogger(__name__)


class EmbeddingPrefetch:
    """Embeds each list of texts `calls` yields, in order, on a daemon thread; `stop` ends it between calls.
    The embedder must keep what it computes (a cached one; the prefetch takes it over and closes its cache)."""

    def __init__(self, embedder: Embedder, calls: Iterable[list[str]], name: str = "embedding-prefetch"):
        self.embedder = embedder
        self.calls = calls
        self.done = 0  # calls embedded or found in the cache
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def _run(self) -> None:
        try:
            for texts in self.calls:
                if self._stop.is_set():
                    return
                self.embedder.embed(texts)  # a cached embedder: hits cost a lookup, misses are stored
                self.done += 1
        except Exception as exc:  # the stage embeds what is missing; the run must not fail here
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("embedding prefetch stopped (the stages embed the rest): %s", self.error)
        finally:  # a process building many corpora (an eval run) keeps no texts or connection per corpus
            self.calls = ()
            atexit.unregister(self.stop)
            cache = getattr(self.embedder, "cache", None)
            if cache is not None:
                cache.close()

    def start(self) -> EmbeddingPrefetch:
        atexit.register(self.stop)  # a process that ends first waits for the call in flight, no more
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Wait until every call is embedded (or the prefetch failed or was stopped)."""
        self._thread.join(timeout)

    def running(self) -> bool:
        return self._thread.is_alive()

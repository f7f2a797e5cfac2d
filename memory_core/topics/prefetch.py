"""Segment vectors embedded ahead of the topics stage, on a daemon thread, while the stages before it run.

The topics stage's segment pass is most of a build's embedding (~45 of ~105 s on a 500-turn LongMemEval
haystack), and the stages that run between segments and topics (extraction, the concept loop) keep one
core busy. This thread embeds the current segments' texts on another core, through the shared embedding
cache, in the very chunks the topics stage asks for (`embed_texts`), from the last chunk backwards. The
topics stage takes chunks from the first, finds the prefetched ones in the cache, and the two meet in the
middle: at most the chunk in flight at that moment is embedded by both, and both compute the same vectors
(same model, same chunk: sentence-transformers sorts a call's texts by length, so the batches are the same),
equal but for float noise (~1e-7) between threads, which the topic tuner can feel (evals/README.md).

`canonical_concepts` starts it because it is the stage that runs before `topics` in a build's plan (the two
sit in one level of the plan, which Dagster orders by name); an embedder without a cache would throw the
vectors away, so there is no prefetch without one.

A failed prefetch costs nothing but its time: whatever it did not store, the topics stage embeds itself.
"""

from __future__ import annotations

import atexit
import logging
import threading

from memory_core.embeddings.base import Embedder
from memory_core.embeddings.cache import CachedEmbedder
from memory_core.store.db import CorpusStore
from memory_core.topics.stage import TopicsConfig, embed_chunks, load_segments

log = logging.getLogger(__name__)


class SegmentVectorPrefetch:
    """Embeds `chunks` (lists of texts) last to first on a daemon thread; `stop` ends it between chunks."""

    def __init__(self, embedder: Embedder, chunks: list[list[str]]):
        self.embedder = embedder
        self.chunks = chunks
        self.done = 0  # chunks embedded or found in the cache
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="segment-vector-prefetch", daemon=True)

    def _run(self) -> None:
        try:
            for chunk in reversed(self.chunks):
                if self._stop.is_set():
                    return
                self.embedder.embed(chunk)  # a cached embedder: hits cost a lookup, misses are stored
                self.done += 1
        except Exception as exc:  # the topics stage embeds what is missing; the run must not fail here
            self.error = f"{type(exc).__name__}: {exc}"
            log.warning("segment-vector prefetch stopped (the topics stage embeds the rest): %s", self.error)
        finally:  # a process building many corpora (an eval run) keeps no texts or connection per corpus
            self.chunks = []
            atexit.unregister(self.stop)
            cache = getattr(self.embedder, "cache", None)
            if cache is not None:
                cache.close()

    def start(self) -> SegmentVectorPrefetch:
        atexit.register(self.stop)  # a process that ends first waits for the chunk in flight, no more
        self._thread.start()
        return self

    def stop(self, timeout: float | None = 60.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Wait until every chunk is embedded (or the prefetch failed or was stopped)."""
        self._thread.join(timeout)

    def running(self) -> bool:
        return self._thread.is_alive()


def prefetch_segment_vectors(
    store: CorpusStore, embedder: CachedEmbedder, batch: int = TopicsConfig.embed_batch
) -> SegmentVectorPrefetch:
    """Start embedding the corpus's current segments in the topics stage's chunks (see the module doc). The
    embedder must keep what it computes (a cached one; the prefetch takes it over and closes its cache)."""
    chunks = embed_chunks([s.text for s in load_segments(store)], batch)
    return SegmentVectorPrefetch(embedder, chunks).start()

"""A persistent embedding cache shared by every corpus: (model, sha256(text)) → float32 vector.

One SQLite file under the memory home's cache folder (`cache/embeddings.sqlite`). Only misses reach the
model; computed vectors are written (and committed) before they are returned, so a crashed run never
recomputes them. Concurrent runs of different corpora share the file safely (WAL, busy timeout,
`INSERT OR IGNORE`: the first writer of a key wins, and both computed the same vector anyway). Within a
process, a call whose misses another thread is computing right now waits for those vectors instead of
computing them again (`_CallsInFlight`: a prefetch and the stage it runs ahead of meet on a chunk).

    embedder = CachedEmbedder(SentenceTransformerEmbedder(), EmbeddingCache.for_home(home))
    vectors = embedder.embed(texts)     # (len(texts), dim) float32, rows L2-normalised
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_core.embeddings.base import Embedder, EmbedderSpec
from memory_core.ids import sha256_text
from memory_core.progress import Progress
from memory_core.store.keyed_cache import KeyedCacheFile

CACHE_FILE = "embeddings.sqlite"


class EmbeddingCache:
    def __init__(self, path: str | Path):
        self._file = KeyedCacheFile(path, "embeddings", "dim INTEGER NOT NULL, vector BLOB NOT NULL")
        self.path = self._file.path

    @classmethod
    def for_home(cls, home) -> EmbeddingCache:
        """The shared cache of a `MemoryHome`."""
        return cls(home.cache_dir / CACHE_FILE)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, np.ndarray]:
        return {
            key: np.frombuffer(blob, dtype=np.float32, count=dim)
            for key, dim, blob in self._file.select_many(model, hashes, "dim, vector")
        }

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        self._file.insert_many(
            [
                (model, key, int(vec.shape[0]), np.asarray(vec, dtype=np.float32).tobytes())
                for key, vec in items
            ]
        )

    def count(self, model: str | None = None) -> int:
        return self._file.count(model)

    def close(self) -> None:
        self._file.close()


@dataclass
class CacheStats:
    requested: int = 0
    hits: int = 0
    computed: int = 0
    compute_seconds: float = 0.0  # time inside the wrapped model
    seconds: float = 0.0  # total time in embed(), lookups and writes included

    def as_metadata(self, prefix: str = "embedding_") -> dict[str, float | int]:
        return {
            f"{prefix}requested": self.requested,
            f"{prefix}cache_hits": self.hits,
            f"{prefix}computed": self.computed,
            f"{prefix}compute_seconds": round(self.compute_seconds, 3),
            f"{prefix}seconds": round(self.seconds, 3),
        }


PROGRESS_CHUNK = 512  # texts per model call when there are more (a progress line can come between two)


def _embed_reporting(inner: Embedder, texts: list[str]) -> np.ndarray:
    """`inner.embed(texts)`, in chunks with progress lines when there are many (a corpus's first build)."""
    if len(texts) <= PROGRESS_CHUNK:
        return inner.embed(texts)
    progress = Progress("embedding", "texts embedded", len(texts))
    parts = []
    for i in range(0, len(texts), PROGRESS_CHUNK):
        parts.append(inner.embed(texts[i : i + PROGRESS_CHUNK]))
        progress.step(len(parts[-1]))
    progress.finish()
    return np.concatenate(parts)


class _CallsInFlight:
    """The model calls this process is making, by (cache file, model, the call's texts): a thread whose misses
    are exactly a call another thread is computing waits for it and reads the vectors from the cache. A
    prefetch and the stage it runs ahead of take the same chunks from opposite ends and meet on one; both
    computed it (the same vectors: the same call)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: dict[tuple[str, str, str], tuple[int, threading.Event]] = {}

    @contextlib.contextmanager
    def claim(self, call: tuple[str, str, str]) -> Iterator[threading.Event | None]:
        """Yields the event of another thread computing `call` (wait for it, then read the cache), or None:
        the caller computes it, and others wait until it leaves. The thread computing it asking again (an
        embedder nested in another on the same cache) computes it too, it never waits for itself."""
        me, mine = threading.get_ident(), threading.Event()
        try:
            with self._lock:
                owner, event = self._calls.setdefault(call, (me, mine))
            yield None if event is mine or owner == me else event
        finally:  # computed and stored, or failed: a waiter then reads the cache, or computes itself
            with self._lock:  # (looked up, not remembered: an interrupt may come between any two steps)
                if self._calls.get(call, (me, None))[1] is mine:
                    del self._calls[call]
            mine.set()


# process-wide like the cache file it guards: the stages and a prefetch hold separate CachedEmbedders
_IN_FLIGHT = _CallsInFlight()
_WAIT_S = 600.0  # a 256-text call takes ~10 s here: far longer is a stuck call, not a slow one


class CachedEmbedder(Embedder):
    """An embedder that asks the cache first and the wrapped model only for misses (deduplicated)."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache):
        self.inner = inner
        self.cache = cache
        self.model_name = inner.model_name
        self.key = inner.vector_key()  # the cache's model column
        self.stats = CacheStats()
        self._stats_lock = threading.Lock()  # a stage may embed its chunks on two threads

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.inner.dim

    def spec(self) -> EmbedderSpec:
        return self.inner.spec()

    def vector_key(self) -> str:
        return self.key

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        started = time.perf_counter()
        hashes = [sha256_text(t) for t in texts]
        found = self.cache.get_many(self.key, hashes)
        missing: dict[str, str] = {}
        for key, text in zip(hashes, texts, strict=True):
            if key not in found and key not in missing:
                missing[key] = text
        compute_seconds, computed = 0.0, 0
        if missing:
            call = (
                str(self.cache.path),
                self.key,
                hashlib.sha256("".join(missing).encode()).hexdigest(),
            )
            with _IN_FLIGHT.claim(call) as elsewhere:
                if elsewhere is None:  # (a call that just ended may have stored them: look once more)
                    found.update(self.cache.get_many(self.key, list(missing)))
                    missing = {k: t for k, t in missing.items() if k not in found}
                    if missing:
                        compute_seconds, computed = self._compute(missing, found), len(missing)
            if elsewhere is not None:
                elsewhere.wait(_WAIT_S)  # (a call that outlives it is computed here too)
                found.update(self.cache.get_many(self.key, list(missing)))
                rest = {k: t for k, t in missing.items() if k not in found}  # (the other call failed)
                if rest:
                    compute_seconds, computed = self._compute(rest, found), len(rest)
        if not texts:
            out = np.zeros((0, self.dim), dtype=np.float32)
        else:
            out = np.stack([found[key] for key in hashes]).astype(np.float32, copy=False)
        with self._stats_lock:
            self.stats.compute_seconds += compute_seconds
            self.stats.requested += len(texts)
            self.stats.hits += len(texts) - computed
            self.stats.computed += computed
            self.stats.seconds += time.perf_counter() - started
        return out

    def _compute(self, missing: dict[str, str], found: dict[str, np.ndarray]) -> float:
        """Embed `missing` (key → text) in one call, store it, add it to `found`; the model's seconds."""
        t0 = time.perf_counter()
        vectors = _embed_reporting(self.inner, list(missing.values()))
        seconds = time.perf_counter() - t0
        items = list(zip(missing.keys(), vectors, strict=True))
        self.cache.put_many(self.key, items)  # written before it is used
        found.update(items)
        return seconds

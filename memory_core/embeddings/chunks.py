"""A long list of texts embedded in small calls of texts of one length, on two threads when there are two
cores.

The local embedder runs one torch thread per call (half the cores: Dagster runs partitions side by side), so
a stage embedding thousands of texts in one call leaves the other core idle. Here the texts are ordered by
length and cut into `size`-text calls, so every batch inside a call pads to about its own length (759
LongMemEval segments, one thread: 53.4 s in 256-text calls of mixed lengths, 63.7 s in 64-text ones, 47.6 s
in 64-text calls ordered by length), and two threads take calls in turn (26.7 s). A cached embedder's
seconds then add up both threads. Small calls also let a prefetch and the stage that
meets it in the middle share the work with little done twice (memory_core/embeddings/prefetch.py). A text's
vector is the same whatever call holds it, but for float noise (~1e-7).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from memory_core.embeddings.base import Embedder


def _by_length(texts: Sequence[str]) -> list[int]:
    return sorted(range(len(texts)), key=lambda i: len(texts[i]))


def chunked(texts: Sequence[str], size: int, order: list[int] | None = None) -> list[list[str]]:
    """The calls `embed_chunked` makes, shortest texts first (a prefetch that makes the same calls leaves the
    stage nothing to embed); `order` is the texts' order by length when the caller has it."""
    order = _by_length(texts) if order is None else order
    return [[texts[i] for i in order[j : j + size]] for j in range(0, len(order), size)]


def spare_workers() -> int:
    """Threads for one stage's embedding: two when there are two cores or more."""
    return 2 if (os.cpu_count() or 1) > 1 else 1


def embed_chunked(
    embedder: Embedder, texts: Sequence[str], size: int, workers: int | None = None
) -> np.ndarray:
    """`embedder.embed` over `chunked(texts, size)` on `workers` threads (default: `spare_workers()`); one
    row per text, in the order of `texts`, as the embedder returns it (not normalised)."""
    if not texts:
        return np.zeros((0, getattr(embedder, "dim", 0) or 1), dtype=np.float32)
    order = _by_length(texts)
    chunks = chunked(texts, size, order)
    workers = spare_workers() if workers is None else workers
    if len(chunks) < 2 or workers < 2:
        parts = [embedder.embed(chunk) for chunk in chunks]
    else:
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="embed-chunk") as pool:
            parts = list(pool.map(embedder.embed, chunks))
    sorted_rows = np.concatenate(parts)
    out = np.empty_like(sorted_rows)
    out[order] = sorted_rows
    return out

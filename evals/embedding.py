"""The embedder the dense baseline uses: the pipeline's own providers from `memory_core.embeddings`.

`make_embedder("minilm")` is the shared local all-MiniLM-L6-v2 provider (CPU, threads and batch size as the
pipeline sets them), sentence-transformers' own float32 vectors; with a memory home it is wrapped in the shared
persistent `CachedEmbedder`, so turn vectors are computed once across runs, and shared with a pipeline that
embeds in float32 (one that embeds in bfloat16 keeps its own, `memory_core/embeddings/precision.py`).
`hashing` is for tests only.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.embeddings import (
    CachedEmbedder,
    EmbeddingCache,
    HashingEmbedder,
    SentenceTransformerEmbedder,
)
from memory_core.embeddings.base import Embedder, EmbedderSpec
from memory_core.store.db import MemoryHome

EMBEDDERS = ("minilm", "hashing")


def make_embedder(kind: str = "minilm") -> Embedder:
    """`minilm` (the pipeline's local model) or `hashing` (fast and deterministic: tests only)."""
    if kind == "minilm":
        return SentenceTransformerEmbedder()
    if kind == "hashing":
        return HashingEmbedder(dim=256)
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")


def cached(embedder: Embedder, home: MemoryHome | None) -> Embedder:
    """The shared persistent cache of `home` around `embedder` (none without a home)."""
    return CachedEmbedder(embedder, EmbeddingCache.for_home(home)) if home is not None else embedder


class MemoEmbedder(Embedder):
    """Remembers turn vectors within one haystack, so two methods over the same turns embed them once.

    Scoped to a haystack on purpose: LongMemEval haystacks share sessions, and a memo across them would
    hide the per-haystack embedding time (the floor of the build-time target).
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_name = inner.model_name
        self._vectors: dict[str, np.ndarray] = {}
        self._scope: str | None = None
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:  # type: ignore[override]
        return self.inner.dim

    def spec(self) -> EmbedderSpec:
        return self.inner.spec()

    def vector_key(self) -> str:
        return self.inner.vector_key()

    def for_haystack(self, haystack_id: str) -> MemoEmbedder:
        if haystack_id != self._scope:
            self._vectors.clear()
            self._scope = haystack_id
        return self

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors))
        if todo:
            for text, vector in zip(todo, self.inner.embed(todo), strict=True):
                self._vectors[text] = vector
        self.misses += len(todo)
        self.hits += len(texts) - len(todo)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._vectors[t] for t in texts])

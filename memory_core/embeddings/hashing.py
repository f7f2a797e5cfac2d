"""A fast deterministic embedder for tests: hashed word unigrams and bigrams (signed feature hashing)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from memory_core.embeddings.base import Embedder, EmbedderSpec, l2_normalise

_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEmbedder(Embedder):
    def __init__(self, dim: int = 256):
        self.dim = dim
        self.model_name = f"hashing-{dim}"

    def spec(self) -> EmbedderSpec:
        return EmbedderSpec("hashing", self.model_name, self.dim)

    def _features(self, text: str) -> list[str]:
        tokens = _TOKEN.findall(text.lower())
        return tokens + [f"{a}_{b}" for a, b in zip(tokens, tokens[1:], strict=False)]

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                out[row, value % self.dim] += 1.0 if (value >> 63) & 1 else -1.0
        return l2_normalise(out)

"""The embedding capability every provider implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np


class Embedder(ABC):
    """Maps texts to L2-normalised float32 vectors (so inner product = cosine)."""

    #: identity of the model, part of every cache key (e.g. "sentence-transformers/all-MiniLM-L6-v2")
    model_name: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), float32, rows L2-normalised."""


def l2_normalise(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return matrix / norms

"""The vector index capability: ids + L2-normalised vectors in, nearest ids by inner product (= cosine) out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class SearchResult:
    """Per query: ids nearest first and their scores (inner product); fewer than k when the index is small."""

    ids: list[list[str]]
    scores: list[list[float]]


class VectorIndex(ABC):
    #: "flat" (exact) or the approximate kind ("ivf", "hnsw")
    kind: str
    dim: int

    @abstractmethod
    def build(self, ids: Sequence[str], vectors: np.ndarray) -> None:
        """Index `vectors` (n × dim float32) under `ids` (unique), replacing any previous content."""

    @abstractmethod
    def search(self, queries: np.ndarray, k: int) -> SearchResult:
        """The k nearest ids of each query row (queries: m × dim, or one vector of dim)."""

    @abstractmethod
    def save(self, path: Path) -> None:
        """Write the index and its id map so that a reader sees the old or the new version, never half."""

    @classmethod
    @abstractmethod
    def load(cls, path: Path) -> VectorIndex: ...

    @property
    @abstractmethod
    def size(self) -> int: ...

    @property
    @abstractmethod
    def ids(self) -> list[str]:
        """The id map: position i of the index holds `ids[i]`."""

    @abstractmethod
    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Each id's position in the index, None for one it does not hold."""

    @abstractmethod
    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """The stored vectors at `positions` (a rebuild reuses them; the read side compares a few with a
        question without searching)."""

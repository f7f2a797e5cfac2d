"""The retriever's shortlist once a corpus has many concepts: the nearest concepts of a batch of candidates
from an inverted-file index over the concept matrix instead of an exact product with every concept.

Why: the exact shortlist costs candidates × concepts, and both grow with the corpus, so consolidation grew
faster than linear (exponent 1.17 from 100k to 300k messages, evals/README.md); an inverted file scans
`nprobe` of its lists. Below `exact_up_to` concepts (every dev conversation and haystack, a 100k-message
history) the retriever stays exact and this module is not used.

The index follows the matrix it shadows: rows added since its last look are added, rows whose vector changed
(a refined concept) are replaced, and it is trained again from the matrix when the matrix has doubled since
it was trained (lists trained on a fifth of the concepts stop fitting). Cosines of what it returns are
recomputed exactly by the retriever, so only membership is approximate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from memory_core.blas import faiss_threads


@dataclass(frozen=True)
class Nearest:
    """One candidate's approximate nearest concept rows (best first, -1 where there were fewer), from the
    index's `look`-th batch look."""

    rows: np.ndarray
    look: int


def list_count(n: int) -> int:
    """Inverted lists for `n` vectors: ~2·√n, so a candidate's look is ~2·√n centroids plus `nprobe` lists of
    ~√n/2 rows (at 80k concepts, 32 probes: ~5k products instead of 80k); at least 39 vectors to train each
    list's centroid on (FAISS's own floor)."""
    return max(1, min(4096, int(2 * math.sqrt(n)), n // 39))


class InvertedShortlist:
    """An IVF-flat inner-product index (FAISS) over rows of a concept matrix, addressed by row number. Runs
    on one thread, as the loop's BLAS does (memory_core/blas.py)."""

    def __init__(self, matrix: np.ndarray, nprobe: int):
        import faiss  # heavy: imported only by a corpus large enough to need it

        self.trained_on = len(matrix)
        dim = matrix.shape[1]
        self._quantizer = faiss.IndexFlatIP(dim)  # kept referenced: the IVF index does not own it
        self._index = faiss.IndexIVFFlat(
            self._quantizer, dim, list_count(len(matrix)), faiss.METRIC_INNER_PRODUCT
        )
        with faiss_threads(1):
            self._index.train(np.ascontiguousarray(matrix, dtype=np.float32))
        self._index.set_direct_map_type(faiss.DirectMap.Hashtable)  # a refined row is replaced by id
        self._index.nprobe = nprobe
        self.rows = 0
        self.sync(matrix, set())

    def stale(self, n: int) -> bool:
        """Whether the lists were trained on too few of the `n` rows to fit them."""
        return n >= 2 * self.trained_on

    def sync(self, matrix: np.ndarray, changed: set[int]) -> None:
        """Add the rows of `matrix` past those indexed, and replace the indexed rows in `changed`."""
        old = np.array(sorted(r for r in changed if r < self.rows), dtype=np.int64)
        with faiss_threads(1):
            self._add(matrix, old)

    def _add(self, matrix: np.ndarray, old: np.ndarray) -> None:
        if len(old):
            self._index.remove_ids(old)
            self._index.add_with_ids(np.ascontiguousarray(matrix[old], dtype=np.float32), old)
        if len(matrix) > self.rows:
            new = np.arange(self.rows, len(matrix), dtype=np.int64)
            self._index.add_with_ids(np.ascontiguousarray(matrix[self.rows :], dtype=np.float32), new)
            self.rows = len(matrix)

    def search(self, vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Inner products and rows of the (approximately) `k` nearest rows of each vector."""
        with faiss_threads(1):
            return self._index.search(np.ascontiguousarray(vectors, dtype=np.float32), k)

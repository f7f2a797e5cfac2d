"""Clustering of unit vectors: (optional) dimensionality reduction → HDBSCAN, and the scores the tuner optimises.

Reductions:
- ``umap``: UMAP on an exact cosine k-nearest-neighbour graph computed here with one blocked matrix product
  (``exact_knn``) and handed to UMAP as ``precomputed_knn``, sliced to each trial's ``n_neighbors``. That skips
  UMAP's own neighbour search — and the numba compilation of its distance kernels, about half of UMAP's
  first-call cost in a fresh process — and lets every trial reuse one neighbour graph. Past
  ``exact_knn_max`` points the exact graph is too costly and UMAP builds its approximate one (NN-descent).
- ``pca``: the first components of one SVD of the centred vectors (deterministic, milliseconds): the small-
  corpus path, where UMAP's neighbourhood graph is too thin to be meaningful and its compile cost dominates.
- ``none``: HDBSCAN on the unit vectors themselves (euclidean on unit vectors is monotone in cosine).

Scores of a clustering (labels -1 = noise): silhouette of the clustered points in the reduced space
(euclidean, what HDBSCAN saw) and in the embedding space (cosine, what retrieval uses), the noise ratio, and
the mean GLOSH outlier score of the clustered points. Everything is seeded: the same vectors and parameters
give the same labels.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from memory_core.embeddings.base import l2_normalise
from memory_core.topics.umap_loader import load_umap

Reduction = Literal["umap", "pca", "none"]
SilhouetteSpace = Literal["reduced", "embedding"]
SELECTION_METHODS = ("eom", "leaf")
_KNN_BLOCK = 1024  # rows per block of the kNN matrix product: 1024 × n floats in memory at a time
_SILHOUETTE_SAMPLE = 4000  # silhouette is O(n²): larger inputs are scored on a seeded sample


@dataclass(frozen=True)
class ClusterParams:
    """One point of the search space. Parameters a reduction does not use keep their values but are ignored."""

    reduction: Reduction
    n_components: int
    n_neighbors: int
    min_dist: float
    min_cluster_size: int
    min_samples: int
    cluster_selection_method: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class ObjectiveWeights:
    """objective = w_s·silhouette − w_n·noise_ratio − w_o·mean outlier score − w_g·|ln(clusters / target)|.

    The granularity term is ours, not the seed's: measured on the LoCoMo dev corpus (1,438 segments), the
    silhouette alone — in either space — peaks at 4-8 clusters of 180-360 segments, too coarse to be an
    entry point for retrieval. It pulls the count towards n / `target_cluster_size` on a log scale (half
    or double the target cost the same); `granularity=0` gives the plain three-term objective.
    Silhouette is taken in the embedding space (cosine) by default: the space retrieval uses, and one that
    UMAP's tight clumps cannot inflate (the reduced-space figure is reported beside it).
    """

    silhouette: float = 1.0
    noise: float = 0.3
    outlier: float = 0.2
    granularity: float = 0.1
    target_cluster_size: int = 30
    silhouette_space: SilhouetteSpace = "embedding"


@dataclass
class ClusterScores:
    n_clusters: int
    noise_ratio: float
    silhouette_reduced: float | None  # None when fewer than 2 clusters
    silhouette_embedding: float | None
    outlier_mean: float
    objective: float
    granularity: float = 0.0  # |ln(clusters / target clusters)|

    def silhouette(self, space: SilhouetteSpace) -> float | None:
        return self.silhouette_reduced if space == "reduced" else self.silhouette_embedding

    def as_dict(self) -> dict:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@dataclass
class Clustering:
    """Labels (-1 noise) with HDBSCAN's membership probabilities and GLOSH outlier scores."""

    params: ClusterParams | None  # None for the single-topic fallback
    labels: np.ndarray
    probabilities: np.ndarray
    outlier_scores: np.ndarray
    reduced: np.ndarray
    scores: ClusterScores
    timings: dict[str, float] = field(default_factory=dict)


def exact_knn(vectors: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Exact cosine k-nearest neighbours of unit vectors, each point first in its own row (distance 0).

    Blocked matrix products (no Python loop over pairs); ties are broken by index, so the graph is
    deterministic. Returns (indices int32 (n, k), cosine distances float32 (n, k)).
    """
    n = vectors.shape[0]
    k = max(1, min(k, n))
    x = np.asarray(vectors, dtype=np.float32)
    indices = np.empty((n, k), dtype=np.int32)
    dists = np.empty((n, k), dtype=np.float32)
    for start in range(0, n, _KNN_BLOCK):
        block = x[start : start + _KNN_BLOCK] @ x.T
        rows = np.arange(block.shape[0])
        block[rows, rows + start] = np.inf  # self first, whatever the duplicates
        if k < n:
            part = np.argpartition(-block, k - 1, axis=1)[:, :k]
        else:
            part = np.tile(np.arange(n), (block.shape[0], 1))
        sims = np.take_along_axis(block, part, axis=1)
        order = np.lexsort((part, -sims), axis=1)  # by similarity desc, then index
        part = np.take_along_axis(part, order, axis=1)
        sims = np.take_along_axis(sims, order, axis=1)
        sims[:, 0] = 1.0
        indices[start : start + block.shape[0]] = part
        dists[start : start + block.shape[0]] = np.clip(1.0 - sims, 0.0, 2.0)
    return indices, dists


class Reducer:
    """Reduces one set of unit vectors under many parameter settings, sharing the expensive parts.

    The kNN graph (UMAP) and the SVD (PCA) are computed once; reduced outputs are memoised per reduction
    parameters because trials that differ only in HDBSCAN parameters reuse them.
    """

    def __init__(
        self,
        vectors: np.ndarray,
        seed: int,
        max_neighbors: int = 0,
        exact_knn_max: int = 20000,
        umap_epochs: int = 200,
    ):
        self.vectors = l2_normalise(vectors)
        self.seed = seed
        self.umap_epochs = umap_epochs
        self.n = self.vectors.shape[0]
        self._knn: tuple[np.ndarray, np.ndarray] | None = None
        self._max_neighbors = max_neighbors
        self._exact_knn_max = exact_knn_max
        self._svd: tuple[np.ndarray, np.ndarray] | None = None
        self._memo: dict[tuple, np.ndarray] = {}
        self.umap_fits: list[
            float
        ] = []  # seconds of each UMAP fit, in order (the first pays numba's compile)
        self.knn_seconds = 0.0

    def knn(self, k: int) -> tuple[np.ndarray, np.ndarray] | None:
        if self.n > self._exact_knn_max:
            return None
        if self._knn is None or self._knn[0].shape[1] < min(k, self.n):
            started = time.perf_counter()
            self._knn = exact_knn(self.vectors, max(k, self._max_neighbors))
            self.knn_seconds += time.perf_counter() - started
        idx, dist = self._knn
        return np.ascontiguousarray(idx[:, :k]), np.ascontiguousarray(dist[:, :k])

    def reduce(self, params: ClusterParams) -> np.ndarray:
        key = (params.reduction, params.n_components, params.n_neighbors, round(params.min_dist, 6))
        if params.reduction == "none":
            return self.vectors
        if params.reduction == "pca":
            key = ("pca", params.n_components)
        if key not in self._memo:
            if len(self._memo) > 64:
                self._memo.clear()
            fn = self._umap if params.reduction == "umap" else self._pca
            self._memo[key] = fn(params)
        return self._memo[key]

    def _pca(self, params: ClusterParams) -> np.ndarray:
        if self._svd is None:
            centred = self.vectors - self.vectors.mean(axis=0, keepdims=True)
            u, s, _ = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
            # directions no larger than float32 rounding of unit vectors are no spread: identical inputs
            # centre to ~3e-8 here (numpy 2.4.6), not 0, and HDBSCAN found two "clusters" in that noise
            s = np.where(s > max(centred.shape) * np.finfo(np.float32).eps, s, 0.0)
            # sign convention: the largest |u| entry of each component positive (SVD signs are arbitrary)
            signs = np.sign(u[np.abs(u).argmax(axis=0), np.arange(u.shape[1])])
            signs[signs == 0] = 1.0
            self._svd = (u * signs, s)
        u, s = self._svd
        k = max(1, min(params.n_components, u.shape[1]))
        return (u[:, :k] * s[:k]).astype(np.float32)

    def _umap(self, params: ClusterParams) -> np.ndarray:
        n_neighbors = max(2, min(params.n_neighbors, self.n - 1))
        knn = self.knn(n_neighbors)
        started = time.perf_counter()
        reduced = umap_embed(
            self.vectors, params.n_components, n_neighbors, params.min_dist, self.seed, knn, self.umap_epochs
        )
        self.umap_fits.append(time.perf_counter() - started)
        return reduced


def umap_embed(
    vectors: np.ndarray,
    n_components: int,
    n_neighbors: int,
    min_dist: float,
    seed: int,
    knn: tuple[np.ndarray, np.ndarray] | None = None,
    n_epochs: int | None = 200,
) -> np.ndarray:
    import umap  # heavy (numba): imported when a reduction first needs it

    n_components = max(1, min(n_components, vectors.shape[0] - 2))
    with warnings.catch_warnings():
        # "n_jobs overridden by random_state" (seeded UMAP is single-threaded: the price of determinism) and
        # "no NNDescent search index" (we never transform new points) are expected
        warnings.simplefilter("ignore")
        model = umap.UMAP(
            n_neighbors=n_neighbors,
            n_components=n_components,
            min_dist=min_dist,
            metric="cosine",
            random_state=seed,
            init="spectral",
            n_epochs=n_epochs,
            precomputed_knn=(knn[0], knn[1], None) if knn is not None else (None, None, None),
            low_memory=True,
            verbose=False,
        )
        return np.asarray(model.fit_transform(vectors), dtype=np.float32)


def warm_up_umap(seed: int, dim: int, numba_cache: Path | None = None) -> float:
    """Fit UMAP once on a tiny seeded input so numba compiles its kernels; the seconds it took (the import
    of umap included).

    In a fresh process this is almost all compilation (the tiny fit itself takes milliseconds), so it is the
    measured compile cost; once compiled — in this process, or into `numba_cache` by an earlier one
    (`umap_loader`) — it returns in a fraction of a second.
    """
    started = time.perf_counter()
    load_umap(numba_cache)
    rng = np.random.default_rng(seed)
    points = l2_normalise(rng.normal(size=(64, dim)).astype(np.float32))
    umap_embed(points, 2, 5, 0.1, seed, exact_knn(points, 5))
    return time.perf_counter() - started


def run_hdbscan(reduced: np.ndarray, params: ClusterParams) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels, probabilities, outlier scores) of HDBSCAN on `reduced` (euclidean)."""
    import hdbscan

    n = reduced.shape[0]
    min_cluster_size = max(2, min(params.min_cluster_size, n // 2))
    min_samples = max(1, min(params.min_samples, min_cluster_size))
    model = hdbscan.HDBSCAN(
        min_cluster_size=min_cluster_size,
        min_samples=min_samples,
        cluster_selection_method=params.cluster_selection_method,
        metric="euclidean",
        core_dist_n_jobs=1,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = model.fit_predict(np.asarray(reduced, dtype=np.float64))
    outliers = np.nan_to_num(np.asarray(model.outlier_scores_, dtype=np.float64), nan=1.0)
    return labels.astype(np.int64), np.asarray(model.probabilities_, dtype=np.float64), outliers


def _silhouette(points: np.ndarray, labels: np.ndarray, metric: str, seed: int) -> float | None:
    from sklearn.metrics import silhouette_score

    mask = labels >= 0
    if len(set(labels[mask].tolist())) < 2 or mask.sum() < 3:
        return None
    sample = _SILHOUETTE_SAMPLE if mask.sum() > _SILHOUETTE_SAMPLE else None
    return float(
        silhouette_score(points[mask], labels[mask], metric=metric, sample_size=sample, random_state=seed)
    )


def score_clustering(
    vectors: np.ndarray,
    reduced: np.ndarray,
    labels: np.ndarray,
    outlier_scores: np.ndarray,
    weights: ObjectiveWeights,
    seed: int,
) -> ClusterScores:
    n = len(labels)
    clustered = labels >= 0
    n_clusters = len(set(labels[clustered].tolist()))
    noise_ratio = float(1.0 - clustered.mean()) if n else 0.0
    sil_reduced = _silhouette(reduced, labels, "euclidean", seed)
    sil_embedding = _silhouette(vectors, labels, "cosine", seed)
    outlier_mean = float(outlier_scores[clustered].mean()) if clustered.any() else 1.0
    silhouette = sil_reduced if weights.silhouette_space == "reduced" else sil_embedding
    target = max(2.0, n / max(1, weights.target_cluster_size))
    granularity = abs(float(np.log(n_clusters / target))) if n_clusters else 0.0
    if silhouette is None:  # fewer than two clusters: worse than any real clustering
        objective = -1.0 - weights.noise * noise_ratio - weights.outlier
    else:
        objective = (
            weights.silhouette * silhouette
            - weights.noise * noise_ratio
            - weights.outlier * outlier_mean
            - weights.granularity * granularity
        )
    return ClusterScores(
        n_clusters=n_clusters,
        noise_ratio=noise_ratio,
        silhouette_reduced=sil_reduced,
        silhouette_embedding=sil_embedding,
        outlier_mean=outlier_mean,
        objective=float(objective),
        granularity=granularity,
    )


def cluster(reducer: Reducer, params: ClusterParams, weights: ObjectiveWeights, seed: int) -> Clustering:
    started = time.perf_counter()
    reduced = reducer.reduce(params)
    reduced_at = time.perf_counter()
    labels, probabilities, outliers = run_hdbscan(reduced, params)
    labels = canonical_labels(labels)
    clustered_at = time.perf_counter()
    scores = score_clustering(reducer.vectors, reduced, labels, outliers, weights, seed)
    return Clustering(
        params=params,
        labels=labels,
        probabilities=probabilities,
        outlier_scores=outliers,
        reduced=reduced,
        scores=scores,
        timings={
            "reduce": reduced_at - started,
            "hdbscan": clustered_at - reduced_at,
            "score": time.perf_counter() - clustered_at,
        },
    )


def single_cluster(vectors: np.ndarray) -> Clustering:
    """The fallback: every point in one cluster (no noise)."""
    n = vectors.shape[0]
    labels = np.zeros(n, dtype=np.int64)
    return Clustering(
        params=None,
        labels=labels,
        probabilities=np.ones(n),
        outlier_scores=np.zeros(n),
        reduced=np.asarray(vectors, dtype=np.float32),
        scores=ClusterScores(
            n_clusters=1 if n else 0,
            noise_ratio=0.0,
            silhouette_reduced=None,
            silhouette_embedding=None,
            outlier_mean=0.0,
            objective=0.0,
        ),
    )


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Renumber clusters by size (largest 0), ties by first member: labels independent of HDBSCAN's order."""
    out = np.full_like(labels, -1)
    clusters = [c for c in np.unique(labels) if c >= 0]
    keyed = sorted(clusters, key=lambda c: (-int((labels == c).sum()), int(np.argmax(labels == c))))
    for new, old in enumerate(keyed):
        out[labels == old] = new
    return out

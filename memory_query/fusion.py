"""Fusion, apart from search: the paths' scores normalised, summed with their weights, and ordered.

A path hands over one score per message. Fusion brings each to [0, 1] (`max_scaled`: divided by the path's
best score; `as_is`: the path scaled its own, e.g. a vector pool's min-max or the graph's share of the
strongest seed), adds it with the path's weight to the running sum, and orders the messages that the
question may see (those outside `as_of` / `roles` never score). Which path reads what is the pipeline's
business (`memory_query.retrieval`); fusion knows no path by name.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def max_scaled(scores: np.ndarray) -> np.ndarray:
    """Scores divided by their maximum (unchanged when nothing scored above 0)."""
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else scores


def as_is(scores: np.ndarray) -> np.ndarray:
    """For a path that already scales its scores to [0, 1]."""
    return scores


def pool_scaled(n: int, positions: Sequence[int], sims: Sequence[float]) -> np.ndarray:
    """Similarities of a retrieved pool min-max scaled to (0, 1] (the pool's weakest maps to ~0), each of
    `n` slots keeping the best of the pool members that land on it."""
    out = np.zeros(n, dtype=np.float32)
    if not positions:
        return out
    sims_arr = np.asarray(sims, dtype=np.float32)
    lo, hi = float(sims_arr.min()), float(sims_arr.max())
    scaled = (sims_arr - lo) / (hi - lo) if hi > lo else np.ones_like(sims_arr)
    np.maximum.at(out, np.asarray(positions, dtype=np.int64), scaled)
    return out


class Fusion:
    """The weighted sum of normalised path scores over a corpus's messages, restricted to those `visible`."""

    def __init__(self, visible: np.ndarray):
        self.visible = visible
        self.total = np.zeros(len(visible), dtype=np.float32)

    def add(self, weight: float, scores: np.ndarray) -> None:
        self.total += weight * scores  # in place: a new sum per path was 4 MB a path at 1M messages

    def scores(self) -> np.ndarray:
        """The fused score per message; -inf for a message the question may not see."""
        return np.where(self.visible, self.total, -np.inf)


def top_positions(values: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k largest values, largest first, equal values in position order (what a stable
    descending sort's first k are, NaN counted as -inf), without sorting them all: a full argsort of a 1M-message corpus's
    scores cost 140 ms a query, most of its time; partitioning all of them still 9-11 ms (three calls a query),
    so a large array is first cut to the values at or above a threshold that a strided sample proves safe."""
    nan = np.isnan(values)
    if nan.any():
        values = np.where(nan, -np.inf, values)  # a NaN ranks with the unscored, never first
    n = len(values)
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k >= n:
        return np.argsort(-values, kind="stable")
    candidates = _at_or_above_sampled_kth(values, k)
    if candidates is None:
        return _top_k(values, k)
    return candidates[_top_k(values[candidates], k)]


def _at_or_above_sampled_kth(values: np.ndarray, k: int, per_k: int = 64) -> np.ndarray | None:
    """Positions (ascending) holding every one of the k largest values, or None when the array is too small
    to gain: those above the k-th largest of a strided sample, then — when fewer than k are — the first of
    those equal to it, in position order. The sample's values are values, so at least k are at or above
    its k-th: the cut is exact, ties included, and stays small when most values tie (a few scored among
    zeros: keeping every tie cost 13 ms at 1M, this 0.7 ms)."""
    stride = len(values) // max(per_k * k, 4096)
    if stride < 8:
        return None
    sample = values[::stride]
    kth = np.partition(sample, len(sample) - k)[len(sample) - k]
    above = np.flatnonzero(values > kth)
    if len(above) >= k:
        return above
    ties = np.flatnonzero(values == kth)[: k - len(above)]
    return np.sort(np.concatenate([above, ties]))


def _top_k(values: np.ndarray, k: int) -> np.ndarray:
    if k >= len(values):
        return np.argsort(-values, kind="stable")
    kth = values[np.argpartition(-values, k - 1)[:k]].min()
    above = np.flatnonzero(values > kth)
    ties = np.flatnonzero(values == kth)[: k - len(above)]
    chosen = np.concatenate([above, ties])
    return chosen[np.argsort(-values[chosen], kind="stable")]


def strongest(fused: np.ndarray, k: int) -> list[int]:
    """Positions of the k best fused scores, best first, among those that scored (finite and above 0)."""
    return [int(i) for i in top_positions(fused, k) if np.isfinite(fused[i]) and fused[i] > 0]

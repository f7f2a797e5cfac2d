"""Layer 2: clustering and the Optuna tuner on small real inputs (PCA path; the UMAP path is marked slow)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score

from memory_core.topics.clustering import (
    ObjectiveWeights,
    canonical_labels,
    exact_knn,
    score_clustering,
)
from memory_core.topics.tuner import SearchSpace, TunerConfig, bounds_for, choose_reduction, tune
from tests.topic_samples import blobs


def _trials(result):
    return [{k: v for k, v in t.items() if k != "seconds"} for t in result.trials]


def test_tuner_recovers_separable_groups():
    vectors, truth = blobs(n_per=25, k=3)
    result = tune(vectors, TunerConfig(n_trials=8, seed=3))
    assert result.path == "tuned" and result.reduction == "pca"  # 75 points: below umap_min_points
    assert len(result.trials) == 8 and not result.truncated
    assert adjusted_rand_score(truth, result.best.labels) == 1.0
    s = result.best.scores
    assert s.n_clusters == 3 and s.noise_ratio == 0.0 and s.silhouette_embedding > 0.7
    assert result.best_trial is not None
    best = result.trials[result.best_trial]
    assert best["objective"] == max(t["objective"] for t in result.trials)
    assert {"n_components", "min_cluster_size", "min_samples", "cluster_selection_method"} <= set(best)


def test_tuner_is_deterministic():
    vectors, _ = blobs(n_per=20, k=4, noise=0.3, seed=5)
    first = tune(vectors, TunerConfig(n_trials=6, seed=11))
    second = tune(vectors, TunerConfig(n_trials=6, seed=11))
    assert np.array_equal(first.best.labels, second.best.labels)
    assert _trials(first) == _trials(second) and first.best.params == second.best.params
    other_seed = tune(vectors, TunerConfig(n_trials=6, seed=12))
    assert _trials(other_seed) != _trials(first)  # the seed drives the sampler


def test_small_inputs_take_the_documented_fallbacks():
    empty = tune(np.zeros((0, 8), np.float32), TunerConfig())
    assert empty.path == "empty" and len(empty.best.labels) == 0
    few, _ = blobs(n_per=2, k=3)  # 6 points < min_points
    single = tune(few, TunerConfig())
    assert single.path == "single" and single.best.labels.tolist() == [0] * 6 and not single.trials
    # no density structure at all: every trial finds < 2 clusters → one topic of everything
    same = tune(np.ones((30, 8), np.float32), TunerConfig(n_trials=4))
    assert same.path == "single" and set(same.best.labels.tolist()) == {0} and len(same.trials) == 4


def test_the_time_cap_is_a_safety_net_that_says_when_it_bit():
    vectors, _ = blobs(n_per=20, k=3)
    result = tune(vectors, TunerConfig(n_trials=50, patience=0, timeout_s=0.0))
    assert 1 <= len(result.trials) < 50 and result.truncated and result.stopped == "time_cap"
    assert result.best.scores.n_clusters >= 2
    unbound = tune(vectors, TunerConfig(n_trials=12, patience=0))
    assert len(unbound.trials) == 12 and not unbound.truncated and unbound.stopped == "budget"


def test_early_stopping_counts_trials_not_seconds():
    """Separable groups are found at once; the search stops `patience` trials after the last improvement
    (never before `startup_trials + patience`), and does so identically every time."""
    vectors, _ = blobs(n_per=25, k=3)
    config = TunerConfig(n_trials=40, patience=4, startup_trials=3, min_improvement=0.002, seed=3)
    first, second = tune(vectors, config), tune(vectors, config)
    assert first.stopped == "early" and 7 <= len(first.trials) < 40
    assert _trials(first) == _trials(second)
    objectives = [t["objective"] for t in first.trials]
    last_gain = max(i for i, value in enumerate(objectives) if i == 0 or value >= max(objectives[:i]) + 0.002)
    assert len(first.trials) == max(last_gain + 1 + 4, 7)


def test_warm_start_points_run_first_and_are_clipped_to_the_space():
    vectors, truth = blobs(n_per=25, k=3)
    previous = {
        "reduction": "pca",
        "n_components": 3,
        "min_cluster_size": 500,  # beyond the bound for 75 points: clipped
        "min_samples": 2,
        "cluster_selection_method": "eom",
    }
    result = tune(vectors, TunerConfig(n_trials=5, patience=0, seed=3), warm_start=[previous])
    assert result.warm_started == 1
    first = result.trials[0]
    hi = bounds_for(75, SearchSpace(), "pca")["min_cluster_size"][1]
    assert (first["n_components"], first["min_cluster_size"], first["min_samples"]) == (3, hi, 2)
    other_reduction = tune(vectors, TunerConfig(n_trials=3), warm_start=[{**previous, "reduction": "umap"}])
    assert other_reduction.warm_started == 0  # a point of another reduction is not this search's
    off = tune(vectors, TunerConfig(n_trials=3, warm_start=False), warm_start=[previous])
    assert off.warm_started == 0


def test_trials_on_a_sample_then_refit_on_everything():
    vectors, truth = blobs(n_per=30, k=3)
    result = tune(vectors, TunerConfig(n_trials=6, tune_sample_size=45))
    assert result.sampled == 45 and len(result.best.labels) == 90
    assert adjusted_rand_score(truth, result.best.labels) == 1.0


def test_reduction_choice_and_bounds_follow_input_size():
    config = TunerConfig()
    assert choose_reduction(149, config) == "pca" and choose_reduction(150, config) == "umap"
    assert choose_reduction(10_000, TunerConfig(reduction="none")) == "none"
    with pytest.raises(ValueError, match="unknown reduction"):
        choose_reduction(10, TunerConfig(reduction="tsne"))
    for n in (3, 12, 40, 1500):
        b = bounds_for(n, SearchSpace(), "pca")
        for key in ("n_neighbors", "n_components", "min_cluster_size", "min_samples"):
            lo, hi = b[key]
            assert lo <= hi, (n, key)
        assert b["min_cluster_size"][1] <= max(2, n // 2)
        assert b["n_components"][1] <= max(1, n - 1)


def test_exact_knn_matches_brute_force():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    idx, dist = exact_knn(x, 6)
    sims = x @ x.T
    for i in range(50):
        assert idx[i, 0] == i and dist[i, 0] == 0.0
        expected = [j for j in np.argsort(-sims[i], kind="stable") if j != i][:5]
        assert idx[i, 1:].tolist() == expected
        assert np.allclose(dist[i, 1:], 1 - sims[i, expected], atol=1e-6)


def test_objective_combines_silhouette_noise_outliers_and_granularity():
    vectors, truth = blobs(n_per=10, k=2, dim=8)
    labels = truth.copy()
    labels[:2] = -1  # two noise points
    outliers = np.full(20, 0.1)
    w = ObjectiveWeights(silhouette=1.0, noise=0.5, outlier=2.0, granularity=0.1, target_cluster_size=5)
    s = score_clustering(vectors, vectors, labels, outliers, w, seed=0)
    assert s.n_clusters == 2 and s.noise_ratio == pytest.approx(0.1)
    # target = 20 / 5 = 4 clusters, found 2: |ln(2/4)|
    assert s.granularity == pytest.approx(np.log(2))
    expected = s.silhouette_embedding - 0.5 * 0.1 - 2.0 * 0.1 - 0.1 * np.log(2)
    assert s.objective == pytest.approx(expected)
    one = score_clustering(vectors, vectors, np.zeros(20, int), outliers, w, seed=0)
    assert one.silhouette_embedding is None and one.objective < -1  # below any real clustering


def test_canonical_labels_number_clusters_by_size():
    labels = np.array([5, 5, -1, 2, 2, 2, 7, 5, 2])
    assert canonical_labels(labels).tolist() == [1, 1, -1, 0, 0, 0, 2, 1, 0]


@pytest.mark.slow
def test_umap_path_recovers_groups_and_is_deterministic():
    vectors, truth = blobs(n_per=60, k=3, dim=48, noise=0.15, seed=2)
    config = TunerConfig(n_trials=3, seed=4)
    first = tune(vectors, config)
    assert first.reduction == "umap" and first.umap_warmup_seconds > 0 and len(first.umap_fit_seconds) >= 1
    assert adjusted_rand_score(truth, first.best.labels) > 0.95
    second = tune(vectors, config)
    assert np.array_equal(first.best.labels, second.best.labels) and _trials(first) == _trials(second)
    assert np.array_equal(first.best.reduced, second.best.reduced)


@pytest.mark.slow
def test_umap_kernels_are_compiled_into_the_memory_home_cache(tmp_path):
    """In a fresh process that imports umap through `load_umap`, numba writes UMAP's compiled kernels to the
    given folder (so the next process loads them instead of compiling)."""
    import subprocess
    import sys

    cache = tmp_path / "numba"
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from memory_core.topics.clustering import warm_up_umap\n"
        f"warm_up_umap(1, 16, Path({str(cache)!r}))\n"
        "import numba\n"
        f"assert numba.config.CACHE_DIR != {str(cache)!r}  # numba's own setting is restored\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    kernels = {p.name.split(".")[0] for p in cache.rglob("*.nbi")}
    assert any(name.startswith("umap_") or name.startswith("layouts") for name in kernels), kernels

"""Fusion apart from search: normalisation, the weighted sum over the visible messages, and the order; and
the registry's phases (a path reads only the fused score of the phases before its own)."""

from __future__ import annotations

import numpy as np

from memory_query.fusion import Fusion, as_is, max_scaled, pool_scaled, strongest
from memory_query.paths import PATH_NAMES, REGISTRY, Phase


def test_normalisers():
    assert max_scaled(np.array([2.0, 1.0, 0.0], dtype=np.float32)).tolist() == [1.0, 0.5, 0.0]
    assert max_scaled(np.zeros(3, dtype=np.float32)).tolist() == [0.0, 0.0, 0.0]  # nothing scored
    raw = np.array([0.3, 0.7], dtype=np.float32)
    assert as_is(raw) is raw
    # a pool of 3 similarities over 4 slots: min-max scaled, the best member kept where two land on a slot
    scaled = pool_scaled(4, [0, 2, 2], [0.2, 0.6, 0.4])
    assert scaled.dtype == np.float32 and scaled.tolist() == [0.0, 0.0, 1.0, 0.0]
    assert pool_scaled(3, [1], [0.9]).tolist() == [0.0, 1.0, 0.0]  # a pool of one
    assert pool_scaled(3, [], []).tolist() == [0.0, 0.0, 0.0]


def test_weighted_sum_over_visible_messages_and_order():
    visible = np.array([True, True, False, True])
    fusion = Fusion(visible)
    fusion.add(1.0, np.array([0.2, 1.0, 1.0, 0.0], dtype=np.float32))
    fusion.add(0.5, np.array([1.0, 0.0, 1.0, 0.0], dtype=np.float32))
    fused = fusion.scores()
    assert fused[2] == -np.inf  # never scores, whatever the paths said
    assert np.allclose(fused[[0, 1, 3]], [0.7, 1.0, 0.0])
    assert strongest(fused, 10) == [1, 0]  # nothing that did not score, nothing invisible
    assert strongest(fused, 1) == [1]


def test_registry_names_and_phases():
    assert len(set(PATH_NAMES)) == len(PATH_NAMES)
    phases = [p.phase for p in REGISTRY]
    assert phases == sorted(phases)  # listed in the order they run
    by_name = {p.name: p for p in REGISTRY}
    # topic routes concepts to the concept path of the same phase: it must come first
    assert PATH_NAMES.index("topic") < PATH_NAMES.index("concept")
    assert by_name["speaker"].phase is Phase.LIFT and by_name["graph"].phase is Phase.CONTEXT


def test_the_top_positions_are_a_stable_descending_sort_s_first_k_without_a_full_sort():
    """`top_positions` (argpartition, then sorting only the chosen) gives exactly what a stable descending
    sort's first k are, ties at the boundary included, on arrays with many equal values and -inf."""
    import numpy as np

    from memory_query.fusion import top_positions

    rng = np.random.default_rng(0)
    for _ in range(500):
        n = int(rng.integers(1, 80))
        values = rng.choice([0.0, 0.25, 0.5, 1.0, 2.0, -np.inf, np.nan], size=n).astype(np.float32)
        k = int(rng.integers(0, 90))
        unscored = np.where(np.isnan(values), -np.inf, values)  # NaN ranks with the unscored
        assert top_positions(values, k).tolist() == np.argsort(-unscored, kind="stable")[:k].tolist()
    big = rng.random(1_000_000).astype(np.float32)
    assert top_positions(big, 10).tolist() == np.argsort(-big, kind="stable")[:10].tolist()


def test_the_sampled_cut_of_a_large_array_keeps_every_one_of_the_top_k():
    """Past ~32k values `top_positions` first keeps only those at or above a strided sample's k-th largest:
    on large arrays shaped like a corpus's fused scores (a few scored among zeros and -inf, heavy ties, a
    sample that misses the best values, every value equal) it still gives exactly a stable sort's first k."""
    import numpy as np

    from memory_query.fusion import top_positions

    rng = np.random.default_rng(1)
    n = 200_000
    few = np.zeros(n, dtype=np.float32)
    few[rng.choice(n, 30, replace=False)] = rng.random(30)  # fewer scored than k at k=50
    unseen = np.full(n, -np.inf, dtype=np.float32)
    unseen[1::97] = 0.5  # stride-aligned values the sample may see; the best ones are off its grid
    unseen[rng.choice(n, 5, replace=False)] = 3.0
    ties = rng.choice([0.0, 0.25, 0.5, 1.0], size=n).astype(np.float32)
    spread = rng.random(n).astype(np.float32)
    spread[rng.choice(n, 1000, replace=False)] = np.nan
    arrays = {"few": few, "unseen": unseen, "ties": ties, "spread": spread, "flat": np.ones(n, np.float32)}
    from memory_query.fusion import _at_or_above_sampled_kth

    for name, values in arrays.items():
        expected = np.argsort(-np.where(np.isnan(values), -np.inf, values), kind="stable")
        for k in (1, 10, 50, 700):
            assert top_positions(values, k).tolist() == expected[:k].tolist(), (name, k)
        cut = _at_or_above_sampled_kth(np.where(np.isnan(values), -np.inf, values), 10)
        assert cut is not None and 10 <= len(cut) < n // 10, name  # the cut ran, and kept few

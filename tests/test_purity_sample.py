"""The purity figure on a seeded sample (memory_core/concepts/purity.py): the whole memory when it is small,
the same per-concept scores on a sample, only the sample embedded, and once per run (the check and the
gardener find the report's vectors in the cache)."""

from __future__ import annotations

import pytest

from memory_core.concepts import metrics
from memory_core.concepts.purity import purity
from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
from memory_core.memory_loop.loop import consolidate
from tests.loop_samples import build_corpus
from tests.test_memory_loop import HASHING


@pytest.fixture
def consolidated(home, tmp_path):
    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    consolidate(store, CachedEmbedder(HashingEmbedder(), EmbeddingCache.for_home(home)), HASHING)
    return store


def _fresh(home, name):
    """An embedder with its own empty cache: `stats.computed` counts what reaches the model."""
    return CachedEmbedder(HashingEmbedder(), EmbeddingCache(home.cache_dir / f"{name}.sqlite"))


def test_a_small_memory_is_scored_whole_and_once_per_run(consolidated, home):
    embedder = _fresh(home, "run")
    report = metrics.purity(consolidated, embedder)
    sample = report["purity_sample"]
    assert sample["concepts_sampled"] == sample["concepts_eligible"] == report["concepts_scored"] == 4
    assert sample["reference_pieces"] == sample["evidence_pieces"]  # under the cap: every piece
    first = embedder.stats.computed
    assert 0 < first <= sample["evidence_pieces"]
    again = metrics.purity(consolidated, embedder)  # the check, then the gardener's quality figures
    metrics.purity(consolidated, embedder)
    assert embedder.stats.computed == first  # nothing embedded again
    assert again["purity_by_concept"] == report["purity_by_concept"]


def test_a_sample_scores_its_concepts_as_the_whole_does(consolidated, home):
    sampled_embedder = _fresh(home, "sampled")
    whole = purity(consolidated, _fresh(home, "whole"))
    sampled = purity(consolidated, sampled_embedder, concepts=2)
    assert sampled["purity_sample"]["concepts_sampled"] == sampled["concepts_scored"] == 2
    assert sampled["purity_sample"]["concepts_eligible"] == 4
    # a concept's score depends on its evidence and the reference, not on which other concepts are scored
    for cid, score in sampled["purity_by_concept"].items():
        assert score == pytest.approx(whole["purity_by_concept"][cid])
    # seeded: the same sample every time, another seed another one
    assert (
        purity(consolidated, sampled_embedder, concepts=2)["purity_by_concept"]
        == sampled["purity_by_concept"]
    )
    seeds = {
        frozenset(purity(consolidated, sampled_embedder, concepts=2, seed=s)["purity_by_concept"])
        for s in range(6)
    }
    assert len(seeds) > 1


def test_a_smaller_reference_embeds_only_the_sample(consolidated, home):
    embedder = _fresh(home, "reference")
    whole = purity(consolidated, _fresh(home, "whole"))
    small = purity(consolidated, embedder, concepts=1, reference=3)
    assert small["purity_sample"]["reference_pieces"] == 3
    scored = small["concepts_scored"]
    assert scored <= 1 and embedder.stats.computed < whole["purity_sample"]["evidence_pieces"]
    assert 0.0 <= small["purity"] <= 1.0

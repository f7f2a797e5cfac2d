"""Layer 2: the retriever's shortlist past `exact_up_to` concepts (an inverted file over the concept matrix)
against the exact one, on clustered vectors shaped like concept keys (many near-restatements of a few
hundred things), and the memory loop run end to end through it."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import numpy as np
import pytest

from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.retriever import ConceptIndex, RetrieverWeights
from memory_core.memory_loop.router import RouterRules
from memory_core.memory_loop.shortlist import Nearest, list_count
from memory_core.store.db import MemoryHome
from tests.loop_samples import build_corpus
from tests.test_memory_loop import _concepts, _evidence

pytest.importorskip("faiss")
T0 = datetime(2024, 1, 5, 9, 0)
DIM = 64


def _unit(m: np.ndarray) -> np.ndarray:
    return (m / np.linalg.norm(m, axis=-1, keepdims=True)).astype(np.float32)


def _clustered(rng, things: int, per: int, spread: float = 0.35) -> np.ndarray:
    centres = rng.normal(size=(things, DIM))
    return _unit(np.repeat(centres, per, axis=0) + spread * rng.normal(size=(things * per, DIM)))


def _indexes(vectors: np.ndarray, exact_up_to: int) -> tuple[ConceptIndex, ConceptIndex]:
    exact = ConceptIndex(RetrieverWeights(exact_up_to=10**9))
    approximate = ConceptIndex(RetrieverWeights(exact_up_to=exact_up_to))
    for i, v in enumerate(vectors):
        for index in (exact, approximate):
            index.add(f"c{i:05d}", v, "entity", [f"thing {i}"], T0, T0)
    return exact, approximate


def _hits(index: ConceptIndex, queries: np.ndarray, presims) -> list[list[tuple[str, float]]]:
    return [
        [(h.concept_id, round(h.similarity, 5)) for h in index.retrieve(q, [], T0, "s", "c", presims=p)]
        for q, p in zip(queries, presims, strict=True)
    ]


def test_past_the_exact_size_the_shortlist_finds_what_the_exact_one_does_with_exact_cosines():
    rng = np.random.default_rng(3)
    vectors = _clustered(rng, things=150, per=20)  # 3,000 concepts
    exact, approximate = _indexes(vectors, exact_up_to=1_000)
    queries = _unit(vectors[rng.integers(0, len(vectors), 300)] + 0.2 * rng.normal(size=(300, DIM)))
    dense = exact.batch_similarities(queries)
    nearest = approximate.batch_similarities(queries)
    assert isinstance(dense, np.ndarray) and all(isinstance(n, Nearest) for n in nearest)
    want, got = _hits(exact, queries, dense), _hits(approximate, queries, nearest)
    # the cosines of what the inverted file returns are the exact ones (only membership is approximate)
    for q, hits in zip(queries, got, strict=True):
        assert all(abs(float(q @ vectors[int(cid[1:])]) - s) < 1e-4 for cid, s in hits)
    top1 = np.mean([w[0][0] == g[0][0] for w, g in zip(want, got, strict=True)])
    overlap = np.mean(
        [len({c for c, _ in w} & {c for c, _ in g}) / len(w) for w, g in zip(want, got, strict=True)]
    )
    assert top1 >= 0.97 and overlap >= 0.9, (top1, overlap)


def test_concepts_created_or_refined_after_the_batchs_look_are_found():
    rng = np.random.default_rng(5)
    vectors = _clustered(rng, things=60, per=20)
    index = ConceptIndex(RetrieverWeights(exact_up_to=500, nprobe=1))  # one list: a row is where it was put
    for i, v in enumerate(vectors):
        index.add(f"c{i:05d}", v, "entity", [f"thing {i}"], T0, T0)
    queries = _unit(rng.normal(size=(3, DIM)))  # far from every concept indexed
    nearest = index.batch_similarities(queries)
    index.add("new", queries[0], "entity", ["new"], T0, T0)  # created by an earlier candidate of the batch
    index.set_vector("c00007", queries[1])  # refined by one
    assert index.retrieve(queries[0], [], T0, "s", "c", presims=nearest[0])[0].concept_id == "new"
    hit = index.retrieve(queries[1], [], T0, "s", "c", presims=nearest[1])[0]
    assert hit.concept_id == "c00007" and hit.similarity == pytest.approx(1.0, abs=1e-5)
    # the next batch's look has both in the inverted file at their new places, the refined row once
    again = index.batch_similarities(queries[:2])
    assert index._inverted.rows == index._inverted._index.ntotal == len(index)
    found = [
        index.retrieve(q, [], T0, "s", "c", presims=p)[0].concept_id
        for q, p in zip(queries, again, strict=False)
    ]
    assert found == ["new", "c00007"]
    assert 7 in again[1].rows[:1]  # found by the inverted file itself, not only as a row refined since
    with pytest.raises(ValueError, match="good for the look that made it"):
        index.retrieve(queries[0], [], T0, "s", "c", presims=nearest[0])  # an earlier look's shortlist


def test_the_inverted_file_is_trained_again_once_the_concepts_have_doubled():
    rng = np.random.default_rng(11)
    vectors = _clustered(rng, things=100, per=30)
    index = ConceptIndex(RetrieverWeights(exact_up_to=1_000))
    for i, v in enumerate(vectors[:1_200]):
        index.add(f"c{i}", v, "entity", [f"t{i}"], T0, T0)
    index.batch_similarities(vectors[:1])
    first = index._inverted
    assert first.trained_on == 1_200
    for i, v in enumerate(vectors[1_200:2_399], start=1_200):
        index.add(f"c{i}", v, "entity", [f"t{i}"], T0, T0)
    index.batch_similarities(vectors[:1])
    assert index._inverted is first and first.rows == 2_399  # caught up, not retrained
    index.add("c2399", vectors[2_399], "entity", ["t2399"], T0, T0)
    index.batch_similarities(vectors[:1])
    assert index._inverted is not first and index._inverted.trained_on == 2_400
    assert list_count(2_400) == 61 and list_count(20_000) == 282 and list_count(10**8) == 4096


def test_max_similarity_in_chunks_and_from_the_inverted_file():
    rng = np.random.default_rng(2)
    vectors = _clustered(rng, things=80, per=25)
    exact, approximate = _indexes(vectors, exact_up_to=1_000)
    queries = _unit(vectors[:513] + 0.1 * rng.normal(size=(513, DIM)))
    whole = np.clip((queries @ exact.matrix.T).max(axis=1), 0.0, 1.0)
    assert np.array_equal(exact.max_similarity(queries, chunk=64), whole)  # 513 = 9 parts, none of one row
    approx = approximate.max_similarity(queries)
    assert np.all(approx <= whole + 1e-5) and np.mean(np.isclose(approx, whole, atol=1e-5)) >= 0.97


def test_the_loop_through_the_inverted_file_decides_as_the_exact_one(tmp_path):
    """With one list (a corpus this small), the inverted file is exhaustive: the loop routed through it
    (concepts created, refined and attached batch after batch) must decide exactly as the exact one."""
    rules = RouterRules(alias_attach_similarity=0.3, fact_alias_similarity=0.3)
    runs, looks = {}, {}
    for name, exact_up_to in (("exact", 10**9), ("inverted", 2)):
        (tmp_path / name).mkdir()
        home = MemoryHome.resolve(tmp_path / name / "home")  # the same corpus (and ids) in two homes
        store = home.corpus("dana")
        build_corpus(store, tmp_path / name)
        config = LoopConfig(
            rules=rules, weights=replace(RetrieverWeights(), exact_up_to=exact_up_to), batch_size=4
        )
        report = consolidate(store, CachedEmbedder(HashingEmbedder(), EmbeddingCache.for_home(home)), config)
        concepts = [
            {k: v for k, v in c.items() if k != "recorded_at"} for c in _concepts(store)
        ]  # the clock's
        runs[name] = (dict(report.actions), concepts, _evidence(store), report.residual_novelty)
        looks[name] = report.approximate_batches
    assert looks["exact"] == 0 and looks["inverted"] >= 2
    assert runs["inverted"][0] == runs["exact"][0] and runs["exact"][0]["create"] >= 5
    assert runs["inverted"][1:3] == runs["exact"][1:3]
    assert runs["inverted"][3] == pytest.approx(runs["exact"][3], abs=1e-4)

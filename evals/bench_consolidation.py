"""Benchmark of the Concept Memory Loop: time per 1k mentions and the share spent embedding.

Builds a corpus from a LoCoMo file (ingest + segments, the foundation's code), writes the stand-in
mention set of `evals/locomo_mentions.py` (the Semantic Mapper is not on main yet), then runs
`consolidate` with the local MiniLM embedder behind a fresh embedding cache, `--repeats` times on fresh
copies of the corpus. Reports medians of: the run's wall time per 1k mentions, the share of it inside the
embedder, the same run with a warm cache (embedding mostly free: the loop's own cost), and, as the
baseline measured in the same process, the pure embedding time of every text the loop embeds. Prints the
quality figures of the last cold run (coverage, purity, grounding, compression, residuals).

    PYTHONPATH=. /work/venv/bin/python evals/bench_consolidation.py ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from datetime import datetime
from pathlib import Path

from evals.locomo_mentions import generate_mentions
from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder
from memory_core.ingest.loader import ingest_file
from memory_core.memory_loop import metrics
from memory_core.memory_loop.loop import consolidate
from memory_core.segments import build_segments
from memory_core.store.db import MemoryHome, dispose_engines


def _prepare(root: Path, locomo: str, sample: str | None):
    home = MemoryHome.resolve(root)
    store = home.corpus("bench")
    ingest_file(store, locomo, "locomo", record_id=sample)
    build_segments(store)
    n = generate_mentions(store)
    return home, store, n


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("locomo")
    ap.add_argument("--sample", help="one LoCoMo sample_id (default: every sample in the file)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--embedder", choices=["local", "hashing"], default="local")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    model = (
        SentenceTransformerEmbedder(threads=args.threads) if args.embedder == "local" else HashingEmbedder()
    )
    model.embed(["load the model before timing"])
    work = Path(tempfile.mkdtemp(prefix="bench-consolidation-"))
    cold, cold_share, warm, pure = [], [], [], []
    last = None
    try:
        for rep in range(args.repeats):
            home, store, n_mentions = _prepare(work / f"r{rep}", args.locomo, args.sample)
            cached = CachedEmbedder(model, EmbeddingCache.for_home(home))  # fresh, empty cache
            report = consolidate(store, cached)
            cold.append(1000 * report.seconds / report.processed)
            cold_share.append(report.embedding_seconds / report.seconds)
            texts = list(_embedded_texts(store))
            t0 = time.perf_counter()
            model.embed(texts)
            pure.append(1000 * (time.perf_counter() - t0) / report.processed)
            figures = {
                **metrics.totals(store),
                **metrics.coverage(store),
                **{k: v for k, v in metrics.purity(store, cached).items() if k != "purity_by_concept"},
                "grounding": metrics.grounding(store)["grounding"],
                **metrics.run_figures(report),
                "actions": dict(report.actions),
                "reasons": dict(report.reasons),
                "mentions_generated": n_mentions,
            }
            # warm: a second corpus copy, same texts, cache already filled
            _, store2, _ = _prepare(work / f"w{rep}", args.locomo, args.sample)
            report2 = consolidate(store2, cached)
            warm.append(1000 * report2.seconds / report2.processed)
            last = (report, figures)
            dispose_engines()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report, figures = last
    out = {
        "embedder": model.model_name,
        "mentions": report.processed,
        "repeats": args.repeats,
        "cold_seconds_per_1k_mentions": round(statistics.median(cold), 3),
        "embedding_share_cold": round(statistics.median(cold_share), 4),
        "warm_cache_seconds_per_1k_mentions": round(statistics.median(warm), 3),
        "pure_embedding_seconds_per_1k_mentions": round(statistics.median(pure), 3),
        "cold_over_pure_embedding": round(statistics.median(cold) / statistics.median(pure), 3),
        "retrieval_ms_by_concepts": retrieval_scaling(),
        "figures": figures,
    }
    print(json.dumps(out, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1), encoding="utf-8")


def retrieval_scaling(sizes=(1_000, 10_000, 50_000), dim=384, candidates=512, batch=256) -> dict:
    """Retrieval cost per candidate as the concept memory grows: one matrix product per batch
    (`batch_similarities`, what the loop does) against one matrix-vector product per candidate."""
    import numpy as np

    from memory_core.memory_loop.retriever import ConceptIndex

    rng = np.random.default_rng(0)
    t = datetime(2024, 1, 1)
    out = {}
    for n in sizes:
        vecs = rng.normal(size=(n, dim)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        index = ConceptIndex(capacity=n)
        for i in range(n):
            index.add(f"c{i}", vecs[i], "entity", [f"concept {i}"], t, t)
        queries = vecs[rng.integers(0, n, candidates)] + 0.1 * rng.normal(size=(candidates, dim)).astype(
            np.float32
        )
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        t0 = time.perf_counter()
        for q in queries:
            index.retrieve(q, ["concept 1"], t, "s", "c")
        single = time.perf_counter() - t0
        t0 = time.perf_counter()
        for start in range(0, candidates, batch):
            chunk = queries[start : start + batch]
            presims = index.batch_similarities(chunk)
            for q, row in zip(chunk, presims, strict=True):
                index.retrieve(q, ["concept 1"], t, "s", "c", presims=row)
        batched = time.perf_counter() - t0
        out[n] = {
            "per_candidate_ms": round(1000 * single / candidates, 3),
            "batched_ms": round(1000 * batched / candidates, 3),
        }
    return out


def _embedded_texts(store):
    """Every distinct text a cold run embeds: candidate keys (which are also the created concepts' keys)
    and the keys of refined concepts."""
    from sqlalchemy import select

    from memory_core.ontology.concepts import concept_embedding_key
    from memory_core.store.schema import action_log, canonical_concepts, mentions

    with store.staging.connect() as conn:
        keys = {
            concept_embedding_key(r.title, r.description)
            for r in conn.execute(select(mentions.c.title, mentions.c.description))
        }
        refined = set(
            conn.execute(select(action_log.c.concept_id).where(action_log.c.action == "refine")).scalars()
        )
        for r in conn.execute(
            select(
                canonical_concepts.c.concept_id, canonical_concepts.c.title, canonical_concepts.c.description
            )
        ):
            if r.concept_id in refined:
                keys.add(concept_embedding_key(r.title, r.description))
    return sorted(keys)


if __name__ == "__main__":
    main()

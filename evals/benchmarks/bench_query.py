"""query_memory latency without an LLM, against a raw FAISS flat search over the same messages, measured in
the same run (docs/architecture.md §12: p95 ≤ 50 ms on a 100k-message corpus; ≤ 5× the flat search).

Both sides embed the query with the same embedder; the baseline then searches an exact inner-product
index over every message vector, while query_memory runs the whole read side (lexical + session BM25,
message and segment vectors, concept and topic entry, graph synthesis, evidence assembly and the XML).

    python -m evals.benchmarks.bench_query --messages 100000              # generated ChatGPT export, hashing-384 vectors
    python -m evals.benchmarks.bench_query --locomo ../shared/data/locomo/locomo_dev.json --sample conv-26   # MiniLM

The generated corpus is built with the 384-d hashing embedder (embedding 100k texts with MiniLM on two
cores takes tens of minutes and does not change search cost); the MiniLM query-embedding cost is measured
separately and printed, so the two can be added.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from evals.benchmarks.common import peak_rss_mib, print_table
from memory_core.settings import offline_model_hub

# what query_memory reads, built without the topic layer (its UMAP fit would dominate the build, and the topic
# path is one small index search at query time)
READ_SIDE_STAGES = [
    "messages",
    "segments",
    "mentions",
    "user_reactions",
    "canonical_concepts",
    "graph",
    "indexes",
]


def _build(
    home_dir: Path,
    name: str,
    path: Path,
    fmt: str,
    record_id: str | None,
    hashing: bool,
    selection: list[str],
) -> float:
    import dagster as dg

    from memory_assets.instance import local_storage
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.store.db import MemoryHome
    from memory_resources.embeddings import EmbeddingsResource

    home = MemoryHome.resolve(home_dir)
    overrides = {"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=384)} if hashing else {}
    (home_dir / "dagster").mkdir(parents=True, exist_ok=True)
    with dg.instance_for_test(
        temp_dir=str(home_dir / "dagster"), overrides={"storage": local_storage(str(home_dir / "dagster"))}
    ) as instance:
        runner = CorpusRunner(home, instance, resources=overrides)
        runner.register(plan_corpora(name, path, fmt, record_id))
        run = runner.materialize(name, selection)
    if not run.success:
        raise SystemExit("build failed")
    return run.seconds


def _percentiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]


def measure(home_dir: Path, name: str, queries: list[str]) -> dict:
    import faiss

    from memory_core.store.db import MemoryHome
    from memory_query import ReaderPool, query_memory
    from memory_query.reader import embedder_for_index

    home = MemoryHome.resolve(home_dir)
    pool = ReaderPool(home)  # warm across the measured queries, as in a long-lived server
    reader = pool.reader(name)
    index = reader.vectors("messages")
    embedder = embedder_for_index(index)
    vectors = index.vectors(list(range(index.size)))
    flat = faiss.IndexFlatIP(vectors.shape[1])
    flat.add(np.ascontiguousarray(vectors, dtype=np.float32))
    query_memory(queries[0], name, k=10, pool=pool)  # warm: load tables, indexes, model
    flat.search(embedder.embed([queries[0]]), 10)
    ours, base = [], []
    for q in queries:
        start = time.perf_counter()
        flat.search(embedder.embed([q]), 10)
        base.append((time.perf_counter() - start) * 1000)
        start = time.perf_counter()
        query_memory(q, name, k=10, pool=pool)
        ours.append((time.perf_counter() - start) * 1000)
    p50, p95 = _percentiles(ours)
    b50, b95 = _percentiles(base)
    return {
        "corpus": name,
        "messages": index.size,
        "index": index.describe().get("kind", ""),
        "query_memory_p50_ms": round(p50, 2),
        "query_memory_p95_ms": round(p95, 2),
        "flat_faiss_p50_ms": round(b50, 2),
        "flat_faiss_p95_ms": round(b95, 2),
        "ratio_p95": round(p95 / b95, 2) if b95 else None,
        "embedder": embedder.model_name,
    }


def minilm_query_ms(queries: list[str]) -> float:
    from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    emb.embed(["warm up"])
    times = []
    for q in queries:
        start = time.perf_counter()
        emb.embed([q])
        times.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=0, help="generated ChatGPT export of this many messages")
    ap.add_argument("--locomo", type=Path, help="a LoCoMo file")
    ap.add_argument("--sample", default="conv-26", help="LoCoMo sample id")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--keep", type=Path, help="build here and keep it (reuse on the next run)")
    args = ap.parse_args()
    offline_model_hub()
    rng = random.Random(11)
    rows = []
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-query-"))
    root.mkdir(parents=True, exist_ok=True)
    if args.messages:
        from evals.benchmarks.bench_ingest import WORDS, generate_chatgpt_export

        name = f"gen{args.messages}"
        export = root / f"{name}.json"
        if not (root / "home" / "corpora" / name).exists():
            generate_chatgpt_export(export, args.messages)
            took = _build(
                root / "home",
                name,
                export,
                "chatgpt",
                None,
                True,
                READ_SIDE_STAGES,
            )
            print(f"built {name} in {took:.0f}s")
        queries = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 8))) for _ in range(args.queries)]
        rows.append(measure(root / "home", name, queries))
        rows[-1]["minilm_query_embed_ms"] = minilm_query_ms(queries[:20])
    if args.locomo:
        import json

        name = f"locomo-{args.sample}"
        if not (root / "home" / "corpora" / name).exists():
            took = _build(
                root / "home",
                name,
                args.locomo,
                "locomo",
                args.sample,
                False,
                READ_SIDE_STAGES,
            )
            print(f"built {name} in {took:.0f}s")
        data = json.loads(args.locomo.read_text())
        sample = next(s for s in data if s["sample_id"] == args.sample)
        queries = [qa["question"] for qa in sample["qa"]][: args.queries]
        rows.append(measure(root / "home", name, queries))
    if rows:
        print_table(rows)
    print(f"peak RSS {peak_rss_mib():.0f} MiB; data in {root}")


if __name__ == "__main__":
    main()

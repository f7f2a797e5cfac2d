"""Benchmark of the topic layer: time of the `topics`, `weighted_links` and `domains` stages per corpus, the share
of the topics stage spent in UMAP's first-call (numba) compile, and two baselines measured in the same run.

Each repeat runs in a fresh process, as a Dagster run does, so every repeat pays the numba compile again.
The corpora must already be built up to `canonical_concepts` in the memory home, e.g.:

    memory-os corpus add locomo ../shared/data/locomo/locomo_dev.json && memory-os materialize locomo
    memory-os corpus add lme ../shared/data/longmemeval/longmemeval_s_dev.json --question-id 26bdc477
    memory-os materialize lme
    python -m evals.benchmarks.bench_topics --home "$MEMORY_OS_HOME" locomo lme --repeats 3

Figures (medians over repeats): seconds of each stage (forced rebuild, segment vectors from the shared cache);
inside topics: tuning, the UMAP warm-up (= compile in a fresh process), its share of the stage; trials and
seconds per trial. Baselines: `one_fit` = one reduction + HDBSCAN with the chosen parameters in the same
process after the compile (what an untuned pipeline pays), so `tuned / one_fit` is the price of tuning; and,
with `--embedding-baseline`, the uncached MiniLM embedding of the corpus's segment texts (the build's floor,
docs/architecture.md §12), measured once per corpus. The stages rewrite the corpus's topic tables (same input, same
configuration: same topics while the trial budget, not the time budget, binds).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from memory_core.settings import child_environment

ROOT = str(Path(__file__).resolve().parents[2])  # the repository: the workers import the project from it


def _worker(corpus: str, home: str) -> dict:
    from memory_core.store.db import MemoryHome
    from memory_core.topics.clustering import Reducer, cluster
    from memory_core.topics.describe import Describer
    from memory_core.topics.domains import DomainsConfig, build_domains
    from memory_core.topics.links import LinkConfig, build_links
    from memory_core.topics.stage import TopicsConfig, build_topics, embed_texts, load_segments
    from memory_resources.embeddings import EmbeddingsResource

    started = time.perf_counter()
    memory_home = MemoryHome.resolve(home)
    store = memory_home.corpus(corpus)
    embedder = EmbeddingsResource().cached_embedder(memory_home)
    config = TopicsConfig(force=True)
    topics = build_topics(store, embedder, config, Describer(), run_id="bench")
    t0 = time.perf_counter()
    links = build_links(store, embedder, LinkConfig(), run_id="bench")
    links_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    domains = build_domains(store, embedder, DomainsConfig(force=True), Describer(), run_id="bench")
    domains_s = time.perf_counter() - t0
    f = topics.figures
    one_fit = None
    params = f["params"]
    if params:  # the untuned baseline: one fit with the chosen parameters, compile already paid
        from memory_core.topics.clustering import ClusterParams

        vectors = embed_texts(embedder, [s.text for s in load_segments(store)], 256)
        tuner = config.tuner
        reducer = Reducer(
            vectors, tuner.seed, exact_knn_max=tuner.exact_knn_max, umap_epochs=tuner.umap_epochs
        )
        t0 = time.perf_counter()
        cluster(reducer, ClusterParams(**params), tuner.weights, tuner.seed)
        one_fit = time.perf_counter() - t0
    return {
        "corpus": corpus,
        "segments": f["segments"],
        "topics": f["topics"],
        "noise_ratio": f["noise_ratio"],
        "silhouette": f["silhouette"],
        "silhouette_reduced": f["silhouette_reduced"],
        "label_centroid_distance": f["label_centroid_distance_mean"],
        "reduction": f["reduction"],
        "trials": f["trials_run"],
        "truncated": f["truncated"],
        "topics_s": f["seconds"],
        "embed_s": f["embed_seconds"],
        "tune_s": f["tune_seconds"],
        "umap_compile_s": f["umap_warmup_seconds"],
        "umap_fit_median_s": f["umap_fit_seconds_median"],
        "links_s": links_s,
        "links": links.figures["links"],
        "domains_s": domains_s,
        "domains": domains.figures["domains"],
        "anchors": domains.figures["anchors"],
        "one_fit_s": one_fit,
        "process_s": time.perf_counter() - started,
    }


def _embedding_baseline(corpus: str, home: str) -> dict:
    from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder
    from memory_core.store.db import MemoryHome
    from memory_core.topics.stage import load_segments

    texts = [s.text for s in load_segments(MemoryHome.resolve(home).corpus(corpus))]
    model = SentenceTransformerEmbedder()
    model.embed(["load the model before timing"])
    t0 = time.perf_counter()
    for i in range(0, len(texts), 256):
        model.embed(texts[i : i + 256])
    return {"embedding_s": time.perf_counter() - t0, "texts": len(texts)}


def _spawn(args: list[str]) -> tuple[dict, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-m", "evals.benchmarks.bench_topics", *args],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=child_environment(PYTHONPATH=ROOT, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1"),
    ).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out.strip().splitlines()[-1]), cpu


def _median(runs: list[dict], key: str) -> float | None:
    values = [r[key] for r in runs if r.get(key) is not None]
    return round(statistics.median(values), 3) if values else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpora", nargs="*")
    ap.add_argument("--home", help="memory home holding the corpora (default: $MEMORY_OS_HOME)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--embedding-baseline", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--embed-only", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="write the figures here too")
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(_worker(args.worker, args.home)))
        return
    if args.embed_only:
        print(json.dumps(_embedding_baseline(args.embed_only, args.home)))
        return
    if not args.corpora or not args.home:
        ap.error("name at least one corpus and the memory home (--home or MEMORY_OS_HOME)")
    report = {}
    for corpus in args.corpora:
        runs = []
        for r in range(args.repeats):
            run, cpu = _spawn(["--home", args.home, "--worker", corpus])
            run["cpu_s"] = cpu
            runs.append(run)
            print(f"{corpus} repeat {r + 1}: {json.dumps(run)}", file=sys.stderr, flush=True)
        summary = {k: runs[-1][k] for k in ("segments", "topics", "noise_ratio", "silhouette", "reduction")}
        for key in (
            "topics_s",
            "embed_s",
            "tune_s",
            "umap_compile_s",
            "umap_fit_median_s",
            "links_s",
            "domains_s",
            "one_fit_s",
            "process_s",
            "cpu_s",
        ):
            summary[key] = _median(runs, key)
        summary["trials"] = runs[-1]["trials"]
        summary["truncated_runs"] = sum(1 for r in runs if r["truncated"])
        summary["identical_topics_across_repeats"] = len({(r["topics"], r["noise_ratio"]) for r in runs}) == 1
        summary["umap_compile_share"] = (
            round(summary["umap_compile_s"] / summary["topics_s"], 3) if summary["topics_s"] else None
        )
        summary["seconds_per_trial"] = (
            round((summary["tune_s"] - summary["umap_compile_s"]) / summary["trials"], 3)
            if summary["trials"]
            else None
        )
        summary["tuned_over_one_fit"] = (
            round(summary["topics_s"] / summary["one_fit_s"], 1) if summary["one_fit_s"] else None
        )
        summary["three_stages_s"] = round(summary["topics_s"] + summary["links_s"] + summary["domains_s"], 3)
        if args.embedding_baseline:
            base, _ = _spawn(["--home", args.home, "--embed-only", corpus])
            summary["embedding_baseline_s"] = round(base["embedding_s"], 3)
            summary["three_stages_over_embedding"] = round(summary["three_stages_s"] / base["embedding_s"], 3)
        summary["repeats"] = args.repeats
        report[corpus] = summary
    for corpus, summary in report.items():
        print(f"\n{corpus}")
        for key, value in summary.items():
            print(f"  {key:36s} {value}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fp:
            json.dump(report, fp, indent=2)


if __name__ == "__main__":
    main()

"""Benchmark: building one LongMemEval haystack through the pipeline, against the pure embedding time of its
turns (the floor; DESIGN §12 targets build ≤ 2× embedding), and re-materialising it unchanged (≤ 10%).

    python -m evals.benchmarks.bench_build_floor --data ../shared/data/longmemeval/longmemeval_s_dev.json \
        [--question-id ID] [--repeats 3] [--embedder minilm]

Each repeat, interleaved so both see the same machine load: embed every turn text once (model loaded
beforehand, untimed), then build the haystack into a fresh memory home with every asset of the code location
(per-asset seconds from the Dagster run), then materialise it again unchanged. Prints medians and ratios.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from evals.datasets import load_longmemeval, select
from evals.embedding import EMBEDDERS, make_embedder
from memory_core.store.db import MemoryHome, dispose_engines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--question-id", help="default: the first question of the file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--embedder", default="minilm", choices=EMBEDDERS)
    args = parser.parse_args(argv)
    import dagster as dg  # imported only when benchmarking

    from evals.pipeline import pipeline_corpus_builder
    from memory_assets.runner import CorpusRunner

    haystacks = load_longmemeval(args.data)
    (haystack,) = select(haystacks, question_ids=[args.question_id]) if args.question_id else haystacks[:1]
    texts = [t.text for t in haystack.turns]
    embedder = make_embedder(args.embedder)
    embedder.embed(["warm up"])  # loads the model, untimed
    embed_s, build_s, rebuild_s, stages = [], [], [], []
    for repeat in range(args.repeats):
        t0 = time.perf_counter()
        embedder.embed(texts)
        embed_s.append(time.perf_counter() - t0)
        with (
            tempfile.TemporaryDirectory(prefix="memory-os-bench-") as tmp,
            dg.instance_for_test(temp_dir=tmp) as instance,
        ):
            home = MemoryHome.resolve(Path(tmp) / "home")
            build = pipeline_corpus_builder(home, "longmemeval", args.data, CorpusRunner(home, instance))
            t0 = time.perf_counter()
            corpus = build(haystack)
            build_s.append(time.perf_counter() - t0)
            stages.append(corpus.stage_seconds)
            t0 = time.perf_counter()
            build(haystack)
            rebuild_s.append(time.perf_counter() - t0)
            dispose_engines()
        print(
            f"repeat {repeat + 1}: embed {embed_s[-1]:.2f}s, build {build_s[-1]:.2f}s, unchanged rebuild {rebuild_s[-1]:.2f}s",
            flush=True,
        )
    embed, build, rebuild = (statistics.median(v) for v in (embed_s, build_s, rebuild_s))
    print(
        f"haystack {haystack.haystack_id}: {len(texts)} turns, {sum(len(t) for t in texts)} chars, {args.repeats} repeats"
    )
    print(
        f"embedding ({embedder.model_name}) median {embed:.2f}s = {len(texts) / embed:.0f} turns/s  [the floor]"
    )
    print(f"pipeline build median {build:.2f}s = {build / embed:.2f}x the floor (target <= 2x)")
    for stage in sorted({s for per in stages for s in per}):
        print(f"  {stage}: median {statistics.median(per.get(stage, 0.0) for per in stages):.2f}s")
    print(
        f"unchanged re-materialisation median {rebuild:.2f}s = {rebuild / build:.2f}x the first build (target <= 0.10x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

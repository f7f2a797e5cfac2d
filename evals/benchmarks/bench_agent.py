"""The agent loop's cost per question (offline driver): `ask` against `query_memory` on the same built corpora,
in the same run, both through one warm reader pool; steps per question.

    python -m evals.benchmarks.bench_agent --benchmark locomo --data ../shared/data/locomo/locomo_dev.json --split tune
    python -m evals.benchmarks.bench_agent --benchmark longmemeval --data ../shared/data/longmemeval/longmemeval_s_dev.json

It reads the corpora an `eval retrieval` run with the memory method built in the memory home (`--home`, default
$MEMORY_OS_HOME), named `eval-<benchmark>__<record id>`, and skips haystacks not built there. Each corpus is
warmed with one query first (tables, indexes, model), so the figures are the loop's own cost; wall and CPU
milliseconds are both given (the machine is shared).
"""

from __future__ import annotations

import argparse
import statistics
import time

from evals.benchmarks.common import peak_rss_mib, print_table


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2) if ordered else 0.0


def _timed(fn, *args, **kwargs) -> tuple[float, float, object]:
    start, cpu = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return (time.perf_counter() - start) * 1000, (time.process_time() - cpu) * 1000, out


def measure(home, haystacks, corpus_name) -> dict:
    from memory_query import ReaderPool, query_memory
    from memory_query.api import ask

    pool = ReaderPool(home)
    rows = {"query": [], "ask": [], "query_cpu": [], "ask_cpu": [], "added": [], "steps": [], "searches": []}
    corpora = 0
    for haystack in haystacks:
        name = corpus_name(haystack)
        if not home.corpus(name).exists() or not haystack.questions:
            continue
        corpora += 1
        first = haystack.questions[0]
        query_memory(first.question, name, k=10, as_of=first.as_of, pool=pool)  # warm
        for q in haystack.questions:
            wall, cpu, _ = _timed(query_memory, q.question, name, k=10, as_of=q.as_of, pool=pool)
            awall, acpu, answer = _timed(ask, q.question, name, as_of=q.as_of, pool=pool, trace=False)
            rows["query"].append(wall)
            rows["query_cpu"].append(cpu)
            rows["ask"].append(awall)
            rows["ask_cpu"].append(acpu)
            rows["added"].append(awall - wall)
            rows["steps"].append(len(answer.steps))
            rows["searches"].append(sum(1 for s in answer.steps if s.tool == "smart_search"))
    pool.close()
    if not rows["query"]:
        raise SystemExit(
            "no built corpus found: run `memory-os eval retrieval --methods memory` into this home first"
        )
    return {
        "corpora": corpora,
        "questions": len(rows["query"]),
        "query_memory_p50_ms": _p(rows["query"], 0.5),
        "ask_p50_ms": _p(rows["ask"], 0.5),
        "ask_p95_ms": _p(rows["ask"], 0.95),
        "added_p50_ms": _p(rows["added"], 0.5),
        "ratio_p50": round(_p(rows["ask"], 0.5) / max(_p(rows["query"], 0.5), 1e-6), 2),
        "cpu_query_p50_ms": _p(rows["query_cpu"], 0.5),
        "cpu_ask_p50_ms": _p(rows["ask_cpu"], 0.5),
        "steps_median": statistics.median(rows["steps"]),
        "steps_p95": _p(rows["steps"], 0.95),
        "searches_median": statistics.median(rows["searches"]),
    }


def main(argv: list[str] | None = None) -> int:
    from evals.datasets import load_benchmark
    from evals.pipeline import eval_corpus_name
    from evals.splits import in_split
    from memory_core.settings import offline_model_hub
    from memory_core.store.db import MemoryHome

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--benchmark", required=True, choices=["locomo", "longmemeval"])
    ap.add_argument("--data", required=True)
    ap.add_argument("--home", help="memory home holding the eval corpora (default $MEMORY_OS_HOME)")
    ap.add_argument("--split", default="all", choices=["tune", "confirm", "all"])
    args = ap.parse_args(argv)
    offline_model_hub()
    home = MemoryHome.resolve(args.home)
    haystacks = in_split(load_benchmark(args.benchmark, args.data), args.split)
    row = measure(home, haystacks, lambda h: eval_corpus_name(args.benchmark, h.haystack_id))
    print_table([{"benchmark": args.benchmark, "split": args.split, **row}])
    print(f"peak RSS {peak_rss_mib():.0f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

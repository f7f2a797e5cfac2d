"""Benchmark: a long-lived reader's queries right after it opens a corpus whose files are not in the page
cache (a server started after a reboot, or after other work evicted them), against the same queries once
every file has been read — measured in the same process, the baseline right after.

    python -m evals.benchmarks.bench_cold_reader --home DIR --corpus NAME [--queries 300] [--repeats 2]

Each repeat is a fresh process: it drops the corpus's index files from the page cache
(`posix_fadvise(DONTNEED)`, Linux; the files stay on disk), opens a `ReaderPool`, times the first
`query_memory` (tables, lexicon and index loads) and then `--queries` generated questions (p50/p95/max: the
cold reader), then reads every index file and runs the same questions again (the warm baseline). The ratio
is the cold reader's p95 over the warm one's. Use a corpus built by `bench_scale --keep DIR` (its home is
`DIR/n<size>[-read-side]/home`, corpus `scale`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from evals.benchmarks.common import print_table


def _index_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def drop_from_page_cache(files: list[Path]) -> None:
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def read_through(files: list[Path]) -> None:
    from memory_core.vector_index.faiss_index import read_once

    for path in files:
        read_once(path)


def _latencies(questions: list[str], corpus: str, pool) -> list[float]:
    from memory_query import query_memory

    out = []
    for q in questions:
        t0 = time.perf_counter()
        query_memory(q, corpus, k=10, pool=pool)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def _summary(ms: list[float]) -> dict:
    from evals.metrics import percentile

    return {
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 95), 1),
        "max_ms": round(max(ms), 1),
    }


def worker(home_dir: str, corpus: str, queries: int, seed: int) -> dict:
    from evals.benchmarks.bench_scale import _user_text
    from memory_core.store.db import MemoryHome
    from memory_query import ReaderPool, query_memory

    home = MemoryHome.resolve(Path(home_dir))
    files = _index_files(home.corpus(corpus, readonly=True).dir / "indexes")
    drop_from_page_cache(files)
    rng = random.Random(seed)
    first, *questions = [_user_text(rng) for _ in range(queries + 1)]
    with ReaderPool(home) as pool:
        t0 = time.perf_counter()
        query_memory(first, corpus, k=10, pool=pool)
        first_ms = (time.perf_counter() - t0) * 1000
        cold = _latencies(questions, corpus, pool)
        read_through(files)
        warm = _latencies(questions, corpus, pool)
    return {"first_ms": round(first_ms), "cold": _summary(cold), "warm": _summary(warm)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--corpus", default="scale")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)  # internal: one repeat, this seed
    args = ap.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(worker(args.home, args.corpus, args.queries, args.worker)))
        return 0
    rows = []
    for seed in range(args.repeats):
        command = [sys.executable, "-m", "evals.benchmarks.bench_cold_reader", "--home", args.home]
        command += ["--corpus", args.corpus, "--queries", str(args.queries), "--worker", str(seed)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        r = json.loads(done.stdout.strip().splitlines()[-1])
        rows.append(
            {
                "repeat": seed,
                "first_ms": r["first_ms"],
                **{f"cold_{k}": v for k, v in r["cold"].items()},
                **{f"warm_{k}": v for k, v in r["warm"].items()},
                "p95_ratio": round(r["cold"]["p95_ms"] / max(r["warm"]["p95_ms"], 1e-9), 2),
            }
        )
    print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

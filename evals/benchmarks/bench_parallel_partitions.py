"""Several corpus partitions built at once vs one after another (memory_assets.parallel: a run process per
partition, one writer per corpus), in the same run: wall seconds of each way and the ratio.

    python -m evals.benchmarks.bench_parallel_partitions --copies 3      # the demo export three times
    python -m evals.benchmarks.bench_parallel_partitions --data ../shared/data/locomo/locomo_dev.json \
        --records conv-26,conv-30,conv-41 --workers 3 [--database-url 'postgresql+psycopg://…/bench_{corpus}_{store}']

Every corpus is built twice from the same input, under two names (`<record>-seq`, `<record>-par`), in a
fresh memory home and Dagster instance, with the hashing embedder (the pipeline's own cost, not the
model's). On a machine with C free cores the ideal ratio is min(C, workers); the figure says how much of
it the stages' serial parts and the shared disk leave.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from evals.benchmarks.common import print_table

HASHING = {"embeddings": {"provider": "hashing"}}


def build(home, corpora: list[str], workers: int) -> tuple[float, list]:
    from memory_assets.parallel import materialize_in_parallel

    started = time.perf_counter()
    runs = materialize_in_parallel(home, corpora, workers=workers, resource_config=HASHING)
    return time.perf_counter() - started, runs


def main(argv: list[str] | None = None) -> int:
    from memory_assets.instance import memory_instance
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.settings import use_dagster_home
    from memory_core.store.db import MemoryHome

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=None, help="a LoCoMo file (one corpus per record)")
    parser.add_argument("--records", default="conv-26,conv-30,conv-41")
    parser.add_argument(
        "--copies", type=int, default=0, help="instead: this many copies of the demo export (or of --data)"
    )
    parser.add_argument(
        "--workers", type=int, default=0, help="parallel run processes (default: one per record)"
    )
    parser.add_argument("--database-url", default=None, help="store URL template (default: SQLite files)")
    args = parser.parse_args(argv)
    from memory_core.demo import demo_export_path

    copies = args.copies or (0 if args.data else 3)
    data = args.data or demo_export_path()
    records = [f"copy{i}" for i in range(copies)] if copies else [r for r in args.records.split(",") if r]
    workers = args.workers or len(records)
    with tempfile.TemporaryDirectory(prefix="bench_parallel_") as tmp:
        home = MemoryHome.resolve(Path(tmp) / "home", args.database_url)
        use_dagster_home(Path(tmp) / "dagster")  # the run processes inherit it
        runner = CorpusRunner(home, memory_instance(home))
        for suffix in ("seq", "par"):
            for record in records:
                record_id = None if copies else record
                runner.register(plan_corpora(f"{record}-{suffix}", data, record_id=record_id))
        sequential, seq_runs = build(home, [f"{r}-seq" for r in records], workers=1)
        parallel, par_runs = build(home, [f"{r}-par" for r in records], workers=workers)
    rows = [
        {
            "record": record,
            "sequential_run_s": seq.seconds,
            "parallel_run_s": par.seconds,
            "ok": seq.success and par.success and seq.passed and par.passed,
        }
        for record, seq, par in zip(records, seq_runs, par_runs, strict=True)
    ]
    print(
        f"input: {data.name}; stores: {'SQLite files' if not args.database_url else args.database_url.split('@')[-1]}; "
        f"{len(records)} corpora; {workers} workers; cores {os.cpu_count()}; load {os.getloadavg()[0]:.2f}"
    )
    print_table(rows)
    print(
        f"wall: sequential {sequential:.1f} s, parallel {parallel:.1f} s, "
        f"ratio {sequential / parallel:.2f}x (ideal on this machine: {min(os.cpu_count() or 1, workers)}x)"
    )
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

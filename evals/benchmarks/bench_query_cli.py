"""Benchmark: a question answered from the shell (`memory-os query`, a fresh process each time), warm
`query_memory` latency, and the MCP server's first query — each against a baseline measured in the same run
(issue 19: ≤ 2 s cold from the shell, p95 ≤ 50 ms warm).

    python -m evals.benchmarks.bench_query_cli --home DIR --corpus demo [--corpus gen100000] [--repeats 3]

- cold: `python -m memory_cli.main --home DIR query NAME "…" --json` in a fresh process, wall and CPU seconds
  (CPU is what a quiet machine's wall time would be: on a shared 2-core machine wall time is mostly waiting);
  baselines, interleaved with it: the same command with the read cache ignored (the tables and graph walks
  loaded from the stores, as before `memory_query.read_cache`), and with queries embedded by the torch
  provider (what the read side used before the numpy runtime);
- warm: `query_memory` p50/p95 through one `ReaderPool` (a long-lived caller); baseline: the query's embedding
  plus an exact FAISS search over the same message vectors (`bench_query.measure`);
- MCP: `memory-os serve-mcp --corpus NAME` over stdio through the MCP SDK client: spawn → tools listed, the
  first `query_memory` call and the second; baseline: the second call (warm).

Build the corpora first (`memory-os demo`; `python -m evals.benchmarks.bench_query --messages 100000 --keep DIR`
for the generated one, whose vectors are 384-d hashing: embedding 100k texts with MiniLM takes hours here).
The read cache is written by the `indexes` and `graph` assets: a corpus built before it gets it with
`memory-os materialize NAME --select indexes,graph` (or `memory_query.read_cache_writer`'s functions, which
those assets call).
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from evals.benchmarks.common import print_table

QUESTIONS = (
    "When is my half marathon?",
    "Which database does Kestrel use for analytics?",
    "What did I decide about the trip to Lisbon?",
)
_CLI = "from memory_cli.main import cli\ncli(sys.argv[1:])\n"
# the baselines: the product with one piece put back as it was
RUNTIMES = {
    "product": None,
    # the read side before the read cache: every part loaded from the stores
    "no read cache (baseline)": "import memory_query.read_cache as c\nc.load_part = lambda *a, **k: None\n",
    # before the numpy runtime: queries embedded by the pipeline's torch provider (in float32, as then)
    "torch queries (baseline)": (
        "import memory_core.embeddings as e, memory_core.embeddings.factory as f\n"
        "e.build_query_embedder = lambda spec, api_key=None: "
        "f.build_embedder(spec, api_key=api_key, precision='float32')\n"
    ),
}


def _cli(runtime: str, home: Path, corpus: str, question: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one `memory-os query` in a fresh process."""
    args = ["--home", str(home), "query", corpus, question, "--json"]
    patch = RUNTIMES[runtime]
    command = (
        [sys.executable, "-m", "memory_cli.main", *args]
        if patch is None
        else [sys.executable, "-c", "import sys\n" + patch + _CLI, *args]
    )
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, cwd=Path(__file__).resolve().parents[2])
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cold(home: Path, corpus: str, repeats: int) -> list[dict]:
    runs: dict[str, list[tuple[float, float]]] = {runtime: [] for runtime in RUNTIMES}
    for i in range(repeats):
        for runtime in runs:  # interleaved: all see the same load
            runs[runtime].append(_cli(runtime, home, corpus, QUESTIONS[i % len(QUESTIONS)]))
    rows = [
        {
            "corpus": corpus,
            "read side": runtime,
            "cold wall s (median)": round(statistics.median(w for w, _ in values), 2),
            "cold CPU s (median)": round(statistics.median(c for _, c in values), 2),
        }
        for runtime, values in runs.items()
    ]
    product = rows[0]["cold CPU s (median)"]
    for row in rows:
        base = row["cold CPU s (median)"]
        row["product CPU / this"] = round(product / base, 3) if base else None
    return rows


async def _mcp(home: Path, corpus: str) -> dict:
    from mcp import Client, StdioServerParameters

    from memory_core.settings import child_environment

    root = Path(__file__).resolve().parents[2]
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memory_cli.main", "--home", str(home), "serve-mcp", "--corpus", corpus],
        env=child_environment(PYTHONPATH=str(root)),
        cwd=str(root),
    )
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        await client.list_tools()
        ready = time.perf_counter()
        calls = []
        for question in QUESTIONS[:2]:
            t0 = time.perf_counter()
            result = await client.call_tool("query_memory", {"corpus": corpus, "question": question, "k": 8})
            calls.append((time.perf_counter() - t0) * 1000)
            assert not result.is_error, result.content
    return {
        "corpus": corpus,
        "spawn to tools listed s": round(ready - started, 2),
        "first query_memory ms": round(calls[0], 1),
        "second query_memory ms (baseline)": round(calls[1], 1),
        "ratio": round(calls[0] / calls[1], 2) if calls[1] else None,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--home", type=Path, required=True, help="the memory home holding the built corpora")
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--queries", type=int, default=100, help="warm queries")
    ap.add_argument("--mcp-wait", type=float, default=0.0, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from evals.benchmarks.bench_query import measure

    cold_rows, warm_rows, mcp_rows = [], [], []
    for corpus in args.corpus:
        cold_rows += cold(args.home, corpus, args.repeats)
        questions = [f"{q} ({i})" for i in range(args.queries // len(QUESTIONS) + 1) for q in QUESTIONS]
        warm_rows.append(measure(args.home, corpus, questions[: args.queries]))
        mcp_rows.append(asyncio.run(_mcp(args.home, corpus)))
    for rows in (cold_rows, warm_rows, mcp_rows):
        print_table(rows)
        print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

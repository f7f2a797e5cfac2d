"""CI smoke of `memory-os eval retrieval` on real benchmark data, when `../shared/data` exists.

    python -m evals.ci_smoke [--shared DIR] [--out DIR] [--methods bm25,dense]

Runs the command as a subprocess on the first 2 LongMemEval dev questions and the first LoCoMo dev
conversation, validates the output contract (`evals.contract`), and, when `../shared/tools/score_retrievals.py`
is there, checks that report.json agrees with that independent scorer. Exit 0 = fine or no data (says so),
1 = contract broken or numbers disagree. The full dev-set run is a documented command, not part of CI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from evals.contract import ContractError, disagreements, validate_output
from evals.datasets import REPO, load_benchmark, shared_data_dir
from memory_core.settings import child_environment

CASES = (
    ("longmemeval", "longmemeval/longmemeval_s_dev.json", 2),
    ("locomo", "locomo/locomo_dev.json", 1),
)


def run_case(benchmark: str, data: Path, limit: int, methods: list[str], out: Path, env: dict) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "memory_cli.main",
        "eval",
        "retrieval",
        "--benchmark",
        benchmark,
        "--data",
        str(data),
        "--out",
        str(out),
        "--methods",
        ",".join(methods),
        "--limit",
        str(limit),
    ]
    done = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        return [f"{benchmark}: `{' '.join(cmd)}` exited {done.returncode}: {done.stderr.strip()[-2000:]}"]
    expected = {q.question_id for h in load_benchmark(benchmark, data)[:limit] for q in h.questions}
    try:
        report = validate_output(out, benchmark, methods, expected)
    except ContractError as exc:
        return [f"{benchmark}: output contract broken: {exc}"]
    print(done.stdout.strip())
    scorer = data.parent.parent.parent / "tools" / "score_retrievals.py"
    if not scorer.exists():
        print(f"{benchmark}: {scorer} absent, independent cross-check skipped")
        return []
    check = subprocess.run(
        [sys.executable, scorer.name, benchmark, str(data), str(out / "retrievals.jsonl")],
        cwd=scorer.parent,
        capture_output=True,
        text=True,
    )
    if check.returncode != 0:
        return [f"{benchmark}: score_retrievals.py failed: {check.stderr.strip()[-2000:]}"]
    return [f"{benchmark}: {p}" for p in disagreements(report, json.loads(check.stdout))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", help="the benchmark data folder (default ../shared/data beside the repo)")
    parser.add_argument("--out", help="output folder (default: a new temporary folder)")
    parser.add_argument("--methods", default="bm25,dense")
    args = parser.parse_args(argv)
    shared = shared_data_dir(args.shared)
    if not shared.is_dir():
        print(f"eval smoke skipped: {shared} does not exist")
        return 0
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="memory-os-eval-smoke-"))
    home = out / "home"
    env = child_environment(
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
        MEMORY_OS_HOME=str(home),
        DAGSTER_HOME=str(home / "dagster"),
        PYTHONPATH=str(REPO),
    )
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    problems = []
    for benchmark, relative, limit in CASES:
        data = shared / relative
        if not data.is_file():
            problems.append(f"{benchmark}: {data} is missing")
            continue
        problems += run_case(benchmark, data, limit, methods, out / benchmark, env)
    for problem in problems:
        print(f"FAIL {problem}", file=sys.stderr)
    if not problems:
        print(
            f"eval smoke ok: {', '.join(methods)} on {len(CASES)} benchmarks, contract valid, scores agree ({out})"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

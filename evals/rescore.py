"""Score an existing `retrievals.jsonl` again with this version's metrics (e.g. `latest_first` for a run made
before it existed), against the same benchmark data:

    python -m evals.rescore --benchmark longmemeval --data ../shared/data/longmemeval/longmemeval_s_dev.json RUN_DIR

Prints, per method and level, the overall means and writes `RUN_DIR/rescored.json` (the `summarise` shape).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evals.datasets import load_benchmark
from evals.harness import RETRIEVALS
from evals.metrics import score_question, summarise


def rescore(benchmark: str, data: str | Path, run_dir: str | Path) -> dict:
    by_question = {q.question_id: (h, q) for h in load_benchmark(benchmark, data) for q in h.questions}
    scored = []
    for raw in (Path(run_dir) / RETRIEVALS).read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        haystack, question = by_question[line["question_id"]]
        if question.retrieval_scored:
            levels = score_question(haystack, question, line["ranked_turns"], line["ranked_sessions"])
            scored.append((line["method"], question.question_type, levels))
    return summarise(scored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", required=True, choices=("longmemeval", "locomo"))
    parser.add_argument("--data", required=True)
    parser.add_argument("run_dir")
    args = parser.parse_args()
    summary = rescore(args.benchmark, args.data, args.run_dir)
    (Path(args.run_dir) / "rescored.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for method, levels in summary.items():
        for level, values in levels.items():
            overall = values["overall"]
            shown = {
                k: overall[k] for k in ("recall_all@5", "recall_frac@5", "latest_first", "n") if k in overall
            }
            print(f"{method:12} {level:8} {shown}")


if __name__ == "__main__":
    main()

"""Score an existing `retrievals.jsonl` again with this version's metrics (e.g. `latest_first` for a run made
before it existed), against the same benchmark data:

    python -m evals.rescore --benchmark longmemeval --data ../shared/data/longmemeval/longmemeval_s_dev.json RUN_DIR \
        [--by type|split]

Prints, per method and level, the overall means and writes `RUN_DIR/rescored.json` (the `summarise` shape).
`--by split` groups by the dev split (`evals/splits.py`: tune / confirm) instead of the question type, so one
run over all of a dev set reports both sides (in `by_type`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from evals.datasets import load_benchmark
from evals.harness import RETRIEVALS
from evals.metrics import score_question, summarise
from evals.splits import split_of

GROUPS = {
    "type": lambda haystack, question: question.question_type,
    "split": lambda haystack, question: split_of(haystack.haystack_id),
}


def rescore(benchmark: str, data: str | Path, run_dir: str | Path, by: str = "type") -> dict:
    by_question = {q.question_id: (h, q) for h in load_benchmark(benchmark, data) for q in h.questions}
    scored = []
    for raw in (Path(run_dir) / RETRIEVALS).read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        haystack, question = by_question[line["question_id"]]
        if question.retrieval_scored:
            levels = score_question(haystack, question, line["ranked_turns"], line["ranked_sessions"])
            scored.append((line["method"], GROUPS[by](haystack, question), levels))
    return summarise(scored)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--benchmark", required=True, choices=("longmemeval", "locomo"))
    parser.add_argument("--data", required=True)
    parser.add_argument("--by", choices=tuple(GROUPS), default="type", help="how `by_type` groups")
    parser.add_argument("run_dir")
    args = parser.parse_args()
    summary = rescore(args.benchmark, args.data, args.run_dir, args.by)
    (Path(args.run_dir) / "rescored.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    for method, levels in summary.items():
        for level, values in levels.items():
            overall = values["overall"]
            shown = {
                k: overall[k] for k in ("recall_all@5", "recall_frac@5", "latest_first", "n") if k in overall
            }
            print(f"{method:12} {level:8} {shown}")
            if args.by == "split":
                for side, part in sorted(values["by_type"].items()):
                    print(f"{'':12} {side:8} { ({k: part[k] for k in shown if k in part}) }")


if __name__ == "__main__":
    main()

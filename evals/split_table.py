"""Turn recall_frac@5 and recall_all@5 of an existing run, per method and per dev split (`evals/splits.py`:
choose on `tune`, confirm on `confirm`), so one run over all of a dev set reports both sides.

    python -m evals.split_table locomo ../shared/data/locomo/locomo_dev.json RUN_DIR
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

from evals.datasets import load_benchmark
from evals.metrics import score_question
from evals.splits import split_of


def split_table(benchmark: str, data: str | Path, run_dir: str | Path) -> dict[str, dict[str, dict]]:
    """{method: {"tune" | "confirm" | "all": {"recall_frac@5", "recall_all@5", "n"}}}."""
    by_question = {q.question_id: (h, q) for h in load_benchmark(benchmark, data) for q in h.questions}
    scores: dict[str, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for raw in (Path(run_dir) / "retrievals.jsonl").read_text(encoding="utf-8").splitlines():
        line = json.loads(raw)
        haystack, question = by_question[line["question_id"]]
        if not question.retrieval_scored:
            continue
        levels = score_question(haystack, question, line["ranked_turns"], line["ranked_sessions"])
        if "turn" not in levels:
            continue
        pair = (levels["turn"]["recall_frac@5"], levels["turn"]["recall_all@5"])
        for side in (split_of(haystack.haystack_id), "all"):
            scores[line["method"]][side].append(pair)
    return {
        method: {
            side: {
                "recall_frac@5": round(sum(a for a, _ in v) / len(v), 4),
                "recall_all@5": round(sum(b for _, b in v) / len(v), 4),
                "n": len(v),
            }
            for side, v in sides.items()
        }
        for method, sides in scores.items()
    }


def main() -> None:
    print(json.dumps(split_table(*sys.argv[1:4]), indent=1))


if __name__ == "__main__":
    main()

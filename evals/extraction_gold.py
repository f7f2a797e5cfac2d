"""Score a teacher on the project's extraction gold sets (precision/recall of spans and of typed spans, per
type and style, reactions).

    python -m evals.extraction_gold                                     # offline teacher, both gold sets
    python -m evals.extraction_gold --teacher openai \\
        --model gpt-4o-mini [--base-url URL] [--azure-api-version V]   # key from $OPENAI_API_KEY
    ... --json report.json --show-errors

The LLM teacher goes through the same client, cache (under $MEMORY_OS_HOME/cache) and Semantic Mapper as
the pipeline. `extraction_gold.json` was written before the offline rules and used while writing them
(in-sample for the offline teacher); `extraction_gold_holdout.json` was written after they were frozen.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evals.extraction_scoring import score_teacher
from evals.gold import GOLD_DIR, load_extraction_gold
from memory_core.extraction.offline_teacher import OfflineTeacher
from memory_core.extraction.teacher import LLMTeacher, Teacher
from memory_core.llm.base import LLMConfigurationError

GOLD_SETS = ("extraction_gold.json", "extraction_gold_holdout.json")


def build_teacher(args) -> Teacher:
    if args.teacher == "offline":
        return OfflineTeacher()
    from memory_core.llm.factory import LLMSettings, build_llm_client
    from memory_core.store.db import MemoryHome

    settings = LLMSettings(
        teacher="openai",
        model=args.model,
        base_url=args.base_url,
        azure_api_version=args.azure_api_version,
        reasoning_effort=args.reasoning_effort,
    )
    try:
        client = build_llm_client(settings, MemoryHome.resolve().cache_dir)
    except LLMConfigurationError as exc:
        sys.exit(f"--teacher openai: {exc}")
    return LLMTeacher(client)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--teacher", choices=["offline", "openai"], default="offline")
    parser.add_argument("--model", help="default: $OPENAI_MODEL, else gpt-4o-mini")
    parser.add_argument("--base-url")
    parser.add_argument("--azure-api-version")
    parser.add_argument("--reasoning-effort", default="low")
    parser.add_argument("--iou", type=float, default=0.5, help="span overlap (IoU) that counts as a match")
    parser.add_argument("--gold", action="append", help="gold file(s); default: both shipped sets")
    parser.add_argument("--json", type=Path, help="write the full report (with per-message examples) here")
    parser.add_argument("--show-errors", action="store_true", help="print messages where prediction ≠ gold")
    args = parser.parse_args()
    teacher = build_teacher(args)
    reports = {}
    for name in args.gold or GOLD_SETS:
        path = Path(name) if Path(name).exists() else GOLD_DIR / name
        report = score_teacher(teacher, load_extraction_gold(path), threshold=args.iou)
        reports[path.name] = report
        s, t, r = report["spans"], report["typed"], report["reactions"]
        print(
            f"{path.name}: {report['messages']} messages, teacher {report['teacher'].get('teacher')}, {report['seconds']:.2f}s"
        )
        print(
            f"  spans  P {s['precision']:.3f} R {s['recall']:.3f} F1 {s['f1']:.3f}  ({s['tp']}/{s['pred']} pred, {s['gold']} gold)"
        )
        print(f"  typed  P {t['precision']:.3f} R {t['recall']:.3f} F1 {t['f1']:.3f}")
        if report["titles"]["scored"]:
            ti = report["titles"]
            print(
                f"  titles mean token F1 {ti['mean_f1']:.3f}, close (F1 >= 0.6) {ti['close']:.3f} of {ti['scored']}"
            )
        for kind, v in report["by_type"].items():
            print(
                f"    {kind:<20} P {v['precision']:.3f} R {v['recall']:.3f} F1 {v['f1']:.3f}  (gold {v['gold']})"
            )
        for style, v in report["by_style"].items():
            print(f"    style {style:<14} typed F1 {v['typed']['f1']:.3f}  spans F1 {v['spans']['f1']:.3f}")
        d = r["detection"]
        print(
            f"  reactions detection P {d['precision']:.3f} R {d['recall']:.3f}; state accuracy {r['state_accuracy']:.3f}"
        )
        if report["teacher_failures"]:
            print(f"  teacher failures: {len(report['teacher_failures'])}")
        if args.show_errors:
            for e in report["examples"]:
                if (
                    sorted(map(tuple, e["predicted"])) != sorted(map(tuple, e["gold"]))
                    or e["reaction"][0] != e["reaction"][1]
                ):
                    print(
                        f"  {e['message']} reaction {e['reaction']}\n    pred {e['predicted']}\n    gold {e['gold']}"
                        f"\n    titles {e['titles']}\n    screened {e['screened']}"
                    )
    if args.json:
        args.json.write_text(json.dumps(reports, indent=2, default=str), encoding="utf-8")


if __name__ == "__main__":
    main()

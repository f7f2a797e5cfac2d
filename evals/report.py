"""report.json and report.md of a retrieval run.

report.json: `methods.<method>.<turn|session>.overall` and `.by_type.<question_type>` hold the means of
recall_any / recall_all / recall_frac / ndcg at 1, 5, 10 and `n` (questions scored); `methods.<method>.update`
the same for `latest_first` over the questions whose evidence was told at different dates; `methods.<method>.build`
the build time per stage (total / median / max per haystack), `query_latency_ms` p50 / p95,
`peak_rss_mib`; `counts` what was loaded and scored.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evals.datasets import Haystack
from evals.metrics import KS, UPDATE_LEVEL, percentile, summarise

if TYPE_CHECKING:
    from evals.harness import RetrievalRun

REPORT_JSON = "report.json"
REPORT_MD = "report.md"
PROTOCOL = {
    "longmemeval": "turn level: user turns '<session_id>_<turn index>', relevant = user turns with has_answer; "
    "session level: relevant = evidence sessions holding such a turn; _abs and no-evidence questions skipped",
    "locomo": "turn level: dia_ids, relevant = evidence (split on ';', unknown ids dropped), categories 1-4 "
    "with evidence; session level: S<n> of the evidence",
}


def _seconds_table(values: list[float]) -> dict[str, float]:
    return {
        "total": round(sum(values), 3),
        "median": round(statistics.median(values), 4),
        "max": round(max(values), 4),
    }


def build_report(run: RetrievalRun, haystacks: Sequence[Haystack], data_sha256: str) -> dict:
    metrics = summarise(run.scored)
    methods = {}
    for name, stats in run.stats.items():
        stages = sorted({s for per in stats.stage_seconds for s in per})
        counts = sorted({c for per in stats.stage_counts for c in per})
        entry = dict(metrics.get(name, {}))
        entry["build"] = {
            "seconds": _seconds_table(stats.build_seconds) if stats.build_seconds else {},
            "stages": {s: _seconds_table([per.get(s, 0.0) for per in stats.stage_seconds]) for s in stages},
            "counts_median": {
                c: statistics.median(per.get(c, 0) for per in stats.stage_counts) for c in counts
            },
        }
        entry["query_latency_ms"] = (
            {
                "p50": round(percentile(stats.query_ms, 50), 3),
                "p95": round(percentile(stats.query_ms, 95), 3),
                "n": len(stats.query_ms),
            }
            if stats.query_ms
            else {}
        )
        entry["peak_rss_mib"] = round(stats.peak_rss_bytes / 2**20, 1)
        methods[name] = entry
    questions = [q for h in haystacks for q in h.questions]
    return {
        "benchmark": run.benchmark,
        "data": {"path": run.data_path, "sha256": data_sha256},
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "protocol": PROTOCOL[run.benchmark],
        "counts": {
            "haystacks": run.haystacks,
            "turns": sum(len(h.turns) for h in haystacks),
            "questions": len(questions),
            "scored_turn_level": sum(1 for q in questions if q.relevant_turns),
            "scored_session_level": sum(1 for q in questions if q.relevant_sessions),
            "not_scored_abstention": sum(1 for q in questions if q.abstention),
            "not_scored_no_evidence": sum(1 for q in questions if not q.abstention and not q.relevant_turns),
            "loader_notes": sum(len(h.notes) for h in haystacks),
        },
        "methods": methods,
        "wall_seconds": round(run.wall_seconds, 2),
        "rss": run.rss_note,
        "method_config": run.extras,
    }


def _metric_columns(benchmark: str) -> list[str]:
    names = ["recall_any", "recall_all", "ndcg"] + (["recall_frac"] if benchmark == "locomo" else [])
    return [f"{m}@{k}" for m in names for k in KS]


def render_markdown(report: dict) -> str:
    bench = report["benchmark"]
    cols = _metric_columns(bench)
    counts = report["counts"]
    lines = [
        f"# Retrieval: {bench}",
        "",
        f"Data `{report['data']['path']}` (sha256 {report['data']['sha256'][:12]}), {counts['haystacks']} haystacks, "
        f"{counts['turns']} turns, {counts['questions']} questions: {counts['scored_turn_level']} scored at turn level, "
        f"{counts['scored_session_level']} at session level ({counts['not_scored_abstention']} abstention, "
        f"{counts['not_scored_no_evidence']} without evidence skipped). Wall time {report['wall_seconds']:.1f} s.",
        "",
        f"Protocol: {report['protocol']}.",
    ]
    methods = report["methods"]
    for level in ("turn", "session"):
        present = [m for m in methods if level in methods[m]]
        if not present:
            continue
        lines += [
            "",
            f"## {level.capitalize()} level",
            "",
            "| group | method | n | " + " | ".join(cols) + " |",
        ]
        lines.append("|" + "---|" * (len(cols) + 3))
        types = sorted({t for m in present for t in methods[m][level]["by_type"]})
        for group in ["overall", *types]:
            for m in present:
                row = (
                    methods[m][level]["overall"]
                    if group == "overall"
                    else methods[m][level]["by_type"].get(group)
                )
                if row is None:
                    continue
                lines.append(
                    f"| {group} | {m} | {row['n']} | " + " | ".join(f"{row[c]:.3f}" for c in cols) + " |"
                )
    present = [m for m in methods if UPDATE_LEVEL in methods[m]]
    if present:
        lines += [
            "",
            "## Knowledge updates",
            "",
            "Questions whose evidence was told at different dates: `latest_first` = the latest-told evidence "
            "turn ranks above every earlier-told one.",
            "",
            "| group | method | n | latest_first |",
            "|---|---|---|---|",
        ]
        types = sorted({t for m in present for t in methods[m][UPDATE_LEVEL]["by_type"]})
        for group in ["overall", *types]:
            for m in present:
                level = methods[m][UPDATE_LEVEL]
                row = level["overall"] if group == "overall" else level["by_type"].get(group)
                if row is not None:
                    lines.append(f"| {group} | {m} | {row['n']} | {row['latest_first']:.3f} |")
    lines += [
        "",
        "## Cost",
        "",
        "| method | build s/haystack (median) | stages (median s) | query p50 ms | query p95 ms | peak RSS MiB |",
        "|---|---|---|---|---|---|",
    ]
    for m, entry in methods.items():
        build = entry["build"]
        stages = ", ".join(f"{s} {v['median']:.3f}" for s, v in build["stages"].items())
        lat = entry["query_latency_ms"]
        lines.append(
            f"| {m} | {build['seconds'].get('median', 0):.3f} | {stages} | {lat.get('p50', 0):.2f} | {lat.get('p95', 0):.2f} | {entry['peak_rss_mib']:.0f} |"
        )
    lines += ["", f"Peak RSS: {report['rss']}."]
    if report["method_config"]:
        lines += ["", "## Methods", ""]
        lines += [
            f"- `{m}`: " + json.dumps(info, sort_keys=True) for m, info in report["method_config"].items()
        ]
    return "\n".join(lines) + "\n"


def write_report(run: RetrievalRun, haystacks: Sequence[Haystack], data_sha256: str) -> dict:
    report = build_report(run, haystacks, data_sha256)
    (run.out_dir / REPORT_JSON).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (run.out_dir / REPORT_MD).write_text(render_markdown(report), encoding="utf-8")
    return report

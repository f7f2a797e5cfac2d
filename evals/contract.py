"""Validation of an `eval retrieval` output folder against its contract (the CI smoke and tests use it)."""

from __future__ import annotations

import json
from pathlib import Path

from evals.harness import RETRIEVALS
from evals.metrics import KS
from evals.report import REPORT_JSON, REPORT_MD
from evals.retrievers.base import TOP_K

LINE_KEYS = {"benchmark", "question_id", "question_type", "method", "ranked_turns", "ranked_sessions"}


class ContractError(Exception):
    pass


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ContractError(message)


def validate_output(
    out_dir: str | Path, benchmark: str, methods: list[str], question_ids: set[str] | None = None
) -> dict:
    """Raise ContractError on the first breach; return the parsed report."""
    out = Path(out_dir)
    for name in (RETRIEVALS, REPORT_JSON, REPORT_MD):
        _check((out / name).is_file(), f"{out / name} is missing")
    seen: dict[str, set[str]] = {m: set() for m in methods}
    for n, raw in enumerate((out / RETRIEVALS).read_text(encoding="utf-8").splitlines(), 1):
        where = f"{RETRIEVALS}:{n}"
        try:
            line = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ContractError(f"{where}: not JSON ({exc})") from None
        _check(
            isinstance(line, dict) and set(line) == LINE_KEYS,
            f"{where}: keys {sorted(line) if isinstance(line, dict) else line!r}, want {sorted(LINE_KEYS)}",
        )
        _check(
            line["benchmark"] == benchmark, f"{where}: benchmark {line['benchmark']!r}, want {benchmark!r}"
        )
        _check(line["method"] in seen, f"{where}: unexpected method {line['method']!r}")
        for key in ("question_id", "question_type"):
            _check(
                isinstance(line[key], str) and line[key] != "", f"{where}: {key} must be a non-empty string"
            )
        for key in ("ranked_turns", "ranked_sessions"):
            ranked = line[key]
            _check(
                isinstance(ranked, list) and all(isinstance(x, str) for x in ranked),
                f"{where}: {key} must be a list of strings",
            )
            _check(len(ranked) <= TOP_K, f"{where}: {key} has {len(ranked)} items, over {TOP_K}")
            _check(len(set(ranked)) == len(ranked), f"{where}: {key} repeats an id")
        _check(
            line["question_id"] not in seen[line["method"]],
            f"{where}: question {line['question_id']} repeats for {line['method']}",
        )
        if benchmark == "locomo":
            _check(
                all(s.startswith("S") for s in line["ranked_sessions"]), f"{where}: LoCoMo sessions are S<n>"
            )
        seen[line["method"]].add(line["question_id"])
    for method, ids in seen.items():
        _check(bool(ids), f"no retrievals for method {method}")
        if question_ids is not None:
            _check(
                ids == question_ids,
                f"method {method}: questions {sorted(ids ^ question_ids)[:5]} differ from the expected set",
            )
    report = json.loads((out / REPORT_JSON).read_text(encoding="utf-8"))
    _check(report.get("benchmark") == benchmark, "report.json: wrong benchmark")
    metric_keys = {f"{m}@{k}" for m in ("recall_any", "recall_all", "ndcg") for k in KS}
    for method in methods:
        entry = report.get("methods", {}).get(method)
        _check(entry is not None, f"report.json: no entry for method {method}")
        for level in ("turn", "session"):
            if level in entry:
                overall = entry[level]["overall"]
                _check(
                    metric_keys <= set(overall),
                    f"report.json: {method} {level} lacks {sorted(metric_keys - set(overall))}",
                )
                _check(
                    all(0.0 <= overall[k] <= 1.0 for k in metric_keys),
                    f"report.json: {method} {level} metric out of [0, 1]",
                )
                _check(
                    isinstance(entry[level]["by_type"], dict), f"report.json: {method} {level} lacks by_type"
                )
        _check(
            {"p50", "p95"} <= set(entry.get("query_latency_ms", {})),
            f"report.json: {method} lacks query latency",
        )
        _check("stages" in entry.get("build", {}), f"report.json: {method} lacks build stages")
        _check(entry.get("peak_rss_mib", 0) > 0, f"report.json: {method} lacks peak RSS")
    return report


def disagreements(report: dict, independent: dict, tolerance: float = 1e-4) -> list[str]:
    """Where report.json differs from `score_retrievals.py`'s output (its `turn`, `session`, `turn:<type>`
    means per method, and the count of questions it scored). Empty = they agree."""
    problems = []
    if set(independent) != set(report.get("methods", {})):
        problems.append(
            f"methods differ: scorer {sorted(independent)}, report {sorted(report.get('methods', {}))}"
        )
    for method, figures in independent.items():
        ours = report.get("methods", {}).get(method, {})
        n = ours.get("turn", {}).get("overall", {}).get("n")
        if figures["answered"] != n:
            problems.append(f"{method}: scorer scored {figures['answered']} questions, report {n}")
        for key, table in figures.items():
            if key in ("answered", "gold"):
                continue
            level, _, qtype = key.partition(":")
            mine = (
                ours.get(level, {}).get("by_type", {}).get(qtype)
                if qtype
                else ours.get(level, {}).get("overall")
            )
            if mine is None:
                problems.append(f"{method} {key}: missing from the report")
                continue
            for metric, value in table.items():
                if abs(mine.get(metric, float("nan")) - value) > tolerance or metric not in mine:
                    problems.append(f"{method} {key} {metric}: scorer {value}, report {mine.get(metric)}")
    return problems

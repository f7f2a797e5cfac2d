"""The Phase 1 run report: what was (or, in a dry run, would be) done, as JSON and Markdown files in the
corpus folder (`gardener/reports/<run id>.{json,md}`), written atomically. In the seed's EXP-GARDENER-001
the dry-run sandbox intercepted mutations into JSON in the same way."""

from __future__ import annotations

import json
import os
from pathlib import Path

from memory_core.gardener.refactor.run import RefactorReport
from memory_core.store.db import CorpusStore

REPORT_DIR = ("gardener", "reports")


def report_body(report: RefactorReport, quality_before: dict, quality_after: dict | None) -> dict:
    return {
        "corpus": report.corpus,
        "run_id": report.run_id,
        "mode": "dry_run" if report.dry_run else "apply",
        "chooser": report.chooser,
        "proposals_considered": report.proposals_considered,
        "proposals_not_considered": report.not_considered,
        "decisions": dict(report.decisions),
        "decisions_by_category": {k: dict(v) for k, v in sorted(report.by_category.items())},
        "actions_by_type": report.actions_by_type,
        "execution_errors": report.execution_errors,
        "mean_rationale_chars": report.mean_rationale_chars,
        "merge_split_traceability": report.traceability,
        "concept_delta": report.concept_delta,
        "quality_before": quality_before,
        "quality_after": quality_after,
        "content_hash_before": report.hash_before,
        "content_hash_after": report.hash_after,
        "seconds": round(report.seconds, 3),
        "llm_calls": report.llm_calls,
        "actions": [o.summary() for o in report.outcomes],
        "proposals": report.proposal_notes,
    }


def write_report(store: CorpusStore, body: dict) -> tuple[Path, Path]:
    json_path = store.path(*REPORT_DIR, f"{body['run_id']}.json")
    md_path = json_path.with_suffix(".md")
    for path, text in (
        (json_path, json.dumps(body, ensure_ascii=False, indent=1, default=str)),
        (md_path, to_markdown(body)),
    ):
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return json_path, md_path


def _cell(value: object, limit: int = 140) -> str:
    text = str(value).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def to_markdown(body: dict, limit: int = 200) -> str:
    mode = "DRY RUN (nothing was written to the store)" if body["mode"] == "dry_run" else "applied"
    lines = [
        f"# Gardener Phase 1 — {body['corpus']} — {mode}",
        "",
        f"run `{body['run_id']}`, chooser `{body['chooser']}`, {body['proposals_considered']} proposals considered "
        f"({body['proposals_not_considered']} left for a later run), {body['seconds']} s",
        "",
        f"- decisions: {body['decisions']}",
        f"- actions by type: {body['actions_by_type']}",
        f"- execution errors: {body['execution_errors']}; mean rationale {body['mean_rationale_chars']} chars; "
        f"merge/split traceability {body['merge_split_traceability']:.0%}",
        f"- live concepts: {body['concept_delta']:+d}",
    ]
    before, after = body["quality_before"], body["quality_after"]
    if before:
        lines += ["", "| figure | before | after |", "|---|---|---|"]
        for key in ("concepts", "purity", "anchored_rate", "refined_concepts", "coverage", "impure_concepts"):
            lines.append(f"| {key} | {before.get(key, '')} | {(after or {}).get(key, '—')} |")
    lines += [
        "",
        "## Actions",
        "",
        "| # | action | status | concepts | cited | read | rationale |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, a in enumerate(body["actions"][:limit], 1):
        lines.append(
            f"| {i} | {a['action']} | {a['status']} | {len(a['touched'] or a['concept_ids'])} | "
            f"{len(a['cited_message_ids'])} | {len(a['read_segment_ids'])} | "
            f"{_cell(a['error'] or a['rationale'])} |"
        )
    if len(body["actions"]) > limit:
        lines.append(f"\n… {len(body['actions']) - limit} more in the JSON report")
    rejected = [p for p in body["proposals"] if p["decision"] != "act"]
    if rejected:
        lines += [
            "",
            "## Proposals not acted on",
            "",
            "| category | score | decision | why |",
            "|---|---|---|---|",
        ]
        for p in rejected[:limit]:
            lines.append(f"| {p['category']} | {p['score']:.2f} | {p['decision']} | {_cell(p['note'])} |")
    return "\n".join(lines) + "\n"

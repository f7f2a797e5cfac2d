"""One Phase 1 run end to end: quality before, the refactoring, quality after, the report files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.embeddings.base import Embedder
from memory_core.gardener.metrics import quality
from memory_core.gardener.refactor.choosers import Chooser
from memory_core.gardener.refactor.report import report_body, write_report
from memory_core.gardener.refactor.run import RefactorReport, run_refactor
from memory_core.store.db import CorpusStore


@dataclass
class Phase1Result:
    """A Phase 1 run: its report, the report body written to the files, and the files."""

    report: RefactorReport
    body: dict
    json_path: Path
    markdown_path: Path

    def summary(self) -> str:
        body = self.body
        mode = "dry run" if body["mode"] == "dry_run" else "applied"
        return (
            f"{mode} — {body['actions_by_type']}, {body['execution_errors']} execution errors; "
            f"report {self.markdown_path}"
        )

    def as_metadata(self) -> dict:
        """Plain figures under the `gardener_actions` asset's metadata keys (`report` is a path)."""
        body = self.body
        before, after = body["quality_before"], body["quality_after"] or {}
        decisions = body["decisions"]
        return {
            "dry_run": body["mode"] == "dry_run",
            "chooser": body["chooser"],
            "proposals_considered": body["proposals_considered"],
            "accepted": decisions.get("act", 0),
            "rejected": decisions.get("reject", 0),
            "stale": decisions.get("stale", 0),
            "decisions_by_category": body["decisions_by_category"],
            "actions_by_type": body["actions_by_type"],
            "actions_total": sum(body["actions_by_type"].values()),
            "execution_errors": body["execution_errors"],
            "mean_rationale_chars": body["mean_rationale_chars"],
            "merge_split_traceability": body["merge_split_traceability"],
            "concepts_before": before.get("concepts", 0),
            "concepts_after": after.get("concepts", before.get("concepts", 0) + body["concept_delta"]),
            "purity_before": before.get("purity", 0.0),
            "purity_after": after.get("purity", before.get("purity", 0.0)),
            "anchored_rate_before": before.get("anchored_rate", 0.0),
            "anchored_rate_after": after.get("anchored_rate", before.get("anchored_rate", 0.0)),
            "content_hash_before": body["content_hash_before"],
            "content_hash_after": body["content_hash_after"],
            "llm_calls": body["llm_calls"],
            "report": str(self.json_path),
            "seconds": body["seconds"],
        }

    def markdown(self, limit: int = 20000) -> str:
        return self.markdown_path.read_text(encoding="utf-8")[:limit]


def apply_proposals(
    store: CorpusStore,
    embedder: Embedder,
    chooser: Chooser,
    dry_run: bool = True,
    proposal_ids: list[str] | None = None,
    categories: list[str] | None = None,
    max_actions: int = 200,
    run_id: str | None = None,
    purity_threshold: float = 0.70,
    log_fn=None,
) -> Phase1Result:
    """Run Phase 1 and write its report. The caller holds the corpus write lock."""
    if not dry_run:  # the quality before is measured on the rows the log has, as the run acts on them
        repair_rows_behind(store)
    before = quality(store, embedder, purity_threshold)
    report = run_refactor(
        store,
        chooser,
        dry_run=dry_run,
        proposal_ids=proposal_ids,
        categories=categories,
        max_actions=max_actions,
        run_id=run_id,
        log_fn=log_fn,
    )
    after = None if dry_run else quality(store, embedder, purity_threshold)
    body = report_body(report, before, after)
    json_path, md_path = write_report(store, body)
    return Phase1Result(report, body, json_path, md_path)

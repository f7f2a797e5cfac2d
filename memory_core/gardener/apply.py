"""One Phase 1 run end to end: quality before, the refactoring, quality after, the report files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_core.embeddings.base import Embedder
from memory_core.gardener.choosers import Chooser
from memory_core.gardener.metrics import quality
from memory_core.gardener.refactor import RefactorReport, run_refactor
from memory_core.gardener.report import report_body, write_report
from memory_core.store.db import CorpusStore


@dataclass
class Phase1Result:
    report: RefactorReport
    body: dict
    json_path: Path
    markdown_path: Path


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

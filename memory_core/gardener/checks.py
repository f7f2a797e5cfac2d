"""Contracts and quality targets of the gardener, evaluated on what is stored or on the figures a run
reported (the asset checks wrap these; the concept store's own contracts are `memory_core.concepts.checks`)."""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select

from memory_core.gardener import metrics
from memory_core.gardener.common import existing_messages
from memory_core.gardener.proposals import PENDING
from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, lifecycle_proposals

ANCHORED_TARGET = 0.60


def triage_left_concepts_unchanged(triage_figures: Mapping) -> CheckResult:
    """The latest triage run's content hash of canonical_concepts + concept_evidence is equal before and
    after (`triage_figures`: that run's report figures; none yet fails)."""
    before, after = triage_figures.get("content_hash_before"), triage_figures.get("content_hash_after")
    return CheckResult(
        bool(triage_figures) and before == after,
        {"content_hash_before": str(before or ""), "content_hash_after": str(after or "")},
    )


def proposals_cite_sources(store: CorpusStore) -> CheckResult:
    """Every pending proposal has a score in [0, 1], a rationale, existing concepts and cites at least one
    source message that exists."""
    lp = lifecycle_proposals.c
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(lp.proposal_id, lp.concept_ids, lp.score, lp.rationale, lp.cited_message_ids).where(
                lp.status == PENDING
            )
        ).all()
        concepts = set(conn.execute(select(canonical_concepts.c.concept_id)).scalars())
    known = existing_messages(store, (m for r in rows for m in r.cited_message_ids or []))
    bad = [
        r.proposal_id
        for r in rows
        if not r.cited_message_ids
        or not set(r.cited_message_ids) <= known
        or not 0.0 <= r.score <= 1.0
        or not r.rationale.strip()
        or not set(r.concept_ids) <= concepts
    ]
    return CheckResult(not bad, {"pending": len(rows), "invalid": len(bad), "examples": bad[:10]})


def merge_split_traceability(store: CorpusStore) -> CheckResult:
    """Every applied merge/split cites source message ids that exist."""
    t = metrics.traceability(store)
    return CheckResult(
        t["traceability"] == 1.0,
        {
            "merge_split_actions": t["merge_split_actions"],
            "traceability": t["traceability"],
            "untraced_actions": t["untraced_actions"],
        },
    )


def no_execution_errors(phase1_figures: Mapping) -> CheckResult:
    """The latest Phase 1 run had no execution errors (`phase1_figures`: that run's report figures)."""
    errors = int(phase1_figures.get("execution_errors", 0) or 0)
    return CheckResult(
        errors == 0, {"execution_errors": errors, "dry_run": bool(phase1_figures.get("dry_run", True))}
    )


def anchored_rate_target(store: CorpusStore, target: float = ANCHORED_TARGET) -> CheckResult:
    """Share of segments linked to refined concepts (support ≥ 2 or revised) above `target`."""
    a = metrics.anchored_rate(store)
    return CheckResult(
        a["anchored_rate"] > target,
        {
            "anchored_rate": a["anchored_rate"],
            "anchored_segments": a["anchored_segments"],
            "segments": a["segments"],
            "refined_concepts": a["refined_concepts"],
        },
    )

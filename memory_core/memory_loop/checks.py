"""Contracts of the consolidation stage that are the loop's own (the concept store's are in
`memory_core.concepts.checks`); the asset checks wrap these."""

from __future__ import annotations

from sqlalchemy import func, select

from memory_core.concepts import metrics
from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, mentions


def mentions_accounted(store: CorpusStore) -> CheckResult:
    """Every mention is linked to a concept or recorded as a residual, and no link dangles."""
    m, c = mentions, canonical_concepts
    with store.staging.connect() as conn:
        dangling = conn.execute(
            select(func.count())
            .select_from(m.outerjoin(c, c.c.concept_id == m.c.consolidated_id))
            .where(m.c.consolidated_id.is_not(None), c.c.concept_id.is_(None))
        ).scalar_one()
    totals = metrics.totals(store)
    return CheckResult(
        totals["mentions_pending"] == 0 and dangling == 0,
        {
            "mentions": totals["mentions"],
            "linked": totals["mentions_linked"],
            "rejected": totals["mentions_rejected"],
            "pending": totals["mentions_pending"],
            "dangling_links": dangling,
        },
    )

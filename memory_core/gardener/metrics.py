"""Gardener quality figures (docs/architecture.md §9), computed from the stores.

- anchored rate: share of live segments holding active evidence of a live *refined* concept — one that is
  more than its seed mention: corroborated by a second piece of evidence (support ≥ 2) or revised at least
  once (by the memory loop's refine or a gardener action). Target > 0.60.
- concept purity: the concept memory's purity (`memory_core.concepts.purity`: on a seeded sample of concepts,
  chosen by a hash of their ids, so the concepts a refactor left alone are scored before and after alike;
  their vectors are the consolidation report's, from the cache), target > 0.70.
- traceability: share of applied merge/split actions whose cited source ids are non-empty and all exist as
  messages. Target 100%.
"""

from __future__ import annotations

from collections import Counter

from sqlalchemy import func, or_, select

from memory_core.concepts import metrics as concept_metrics
from memory_core.embeddings.base import Embedder
from memory_core.gardener.common import existing_messages
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.store.db import CorpusStore
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    gardener_actions,
    lifecycle_proposals,
    segments,
)


def anchored_rate(store: CorpusStore) -> dict:
    cc, ce, s = canonical_concepts.c, concept_evidence.c, segments.c
    with store.staging.connect() as conn:
        total = conn.execute(select(func.count()).where(s.superseded_at.is_(None))).scalar_one()
        anchored = conn.execute(
            select(func.count(func.distinct(ce.segment_id)))
            .select_from(
                concept_evidence.join(canonical_concepts, cc.concept_id == ce.concept_id).join(
                    segments, s.segment_id == ce.segment_id
                )
            )
            .where(
                s.superseded_at.is_(None),
                ce.status == "active",
                cc.state.in_(LIVE_STATES),
                or_(cc.support_count >= 2, cc.revision_count >= 1),
            )
        ).scalar_one()
        refined = conn.execute(
            select(func.count()).where(
                cc.state.in_(LIVE_STATES), or_(cc.support_count >= 2, cc.revision_count >= 1)
            )
        ).scalar_one()
    return {
        "segments": total,
        "anchored_segments": anchored,
        "anchored_rate": round(anchored / total, 4) if total else 0.0,
        "refined_concepts": refined,
    }


def traceability(store: CorpusStore, run_id: str | None = None) -> dict:
    g = gardener_actions.c
    query = select(g.gardener_action_id, g.cited_message_ids).where(
        g.action.in_(("merge_concepts", "split_concept")), g.status.in_(("applied", "rolled_back"))
    )
    if run_id:
        query = query.where(g.run_id == run_id)
    with store.staging.connect() as conn:
        rows = conn.execute(query).all()
    known = existing_messages(store, (m for _, ids in rows for m in ids or []))
    untraced = [a for a, ids in rows if not ids or not set(ids) <= known]
    return {
        "merge_split_actions": len(rows),
        "traced": len(rows) - len(untraced),
        "traceability": round((len(rows) - len(untraced)) / len(rows), 4) if rows else 1.0,
        "untraced_actions": untraced[:20],
    }


def quality(store: CorpusStore, embedder: Embedder, purity_threshold: float = 0.70) -> dict:
    """The figures a Phase 1 run is judged by, before and after it."""
    purity = concept_metrics.purity(store, embedder, purity_threshold)
    totals = concept_metrics.totals(store)
    coverage = concept_metrics.coverage(store)
    return {
        **anchored_rate(store),
        "purity": purity["purity"],
        "impure_concepts": purity["impure_concepts"],
        "concepts_scored": purity["concepts_scored"],
        "purity_concepts_eligible": purity["purity_sample"]["concepts_eligible"],
        "concepts": totals["concepts"],
        "coverage": coverage["coverage"],
    }


def proposal_counts(store: CorpusStore) -> dict[str, dict[str, int]]:
    """category -> status -> count over every proposal ever written."""
    lp = lifecycle_proposals.c
    out: dict[str, Counter] = {}
    with store.staging.connect() as conn:
        for category, status, n in conn.execute(
            select(lp.category, lp.status, func.count()).group_by(lp.category, lp.status)
        ):
            out.setdefault(category, Counter())[status] = n
    return {k: dict(v) for k, v in sorted(out.items())}

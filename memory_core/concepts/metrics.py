"""Quality figures of the concept memory (docs/architecture.md §9), computed from the stores (the consolidation stage
reports them, the gardener judges a Phase 1 run by them).

- coverage: share of live segments holding evidence of a live (active/weak) concept; high-confidence
  coverage counts only active concepts with confidence ≥ `high_confidence`.
- purity: evidence homogeneity of a concept, on its evidence itself (a fact's span, a name's sentence): the
  percentile of its pieces' mutual similarity among their similarities to other concepts' evidence
  (`memory_core.concepts.purity`). Reported over concepts with ≥ 2 pieces of evidence, on a seeded sample of
  them when there are many (`purity_sample` says how many).
- grounding: share of live concepts whose every evidence span still equals its message text.
- compression: linked mentions per live concept; residual share: memory-loop residuals per mention.

Purity and grounding read every piece of evidence and its message (the stage report and two asset checks
ask for them in every run): their figures are kept while the tables they read stand (memory_core.store.memo).
"""

from __future__ import annotations

import sys
from collections import defaultdict

from sqlalchemy import func, select

import memory_core.ontology
from memory_core.concepts import purity as purity_module
from memory_core.concepts.purity import purity as evidence_purity
from memory_core.concepts.store import CONSOLIDATION_STAGE
from memory_core.embeddings.base import Embedder
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    mentions,
    messages,
    residuals,
    segments,
)

_CHUNK = 500


def coverage(store: CorpusStore, high_confidence: float = 0.7) -> dict:
    live = canonical_concepts.c.state.in_(LIVE_STATES)
    with store.staging.connect() as conn:
        total = conn.execute(
            select(func.count()).select_from(segments).where(segments.c.superseded_at.is_(None))
        ).scalar_one()
        joined = concept_evidence.join(
            canonical_concepts, canonical_concepts.c.concept_id == concept_evidence.c.concept_id
        ).join(segments, segments.c.segment_id == concept_evidence.c.segment_id)
        base = (
            select(func.count(func.distinct(concept_evidence.c.segment_id)))
            .select_from(joined)
            .where(segments.c.superseded_at.is_(None), concept_evidence.c.status == "active")
        )
        covered = conn.execute(base.where(live)).scalar_one()
        high = conn.execute(
            base.where(
                canonical_concepts.c.state == "active", canonical_concepts.c.confidence >= high_confidence
            )
        ).scalar_one()
    return {
        "segments": total,
        "coverage": round(covered / total, 4) if total else 0.0,
        "high_confidence_coverage": round(high / total, 4) if total else 0.0,
    }


_EVIDENCE_TABLES = (
    ("staging", "canonical_concepts"),
    ("staging", "concept_evidence"),
    ("source", "messages"),
)


def purity(store: CorpusStore, embedder: Embedder, threshold: float = 0.70) -> dict:
    """Evidence homogeneity inside concepts, on the evidence itself (`memory_core.concepts.purity`)."""
    code = memo.code_digest(
        [purity_module, memory_core.ontology, store_schema], embedder.model_name, threshold
    )
    figures, _ = memo.kept_or_computed(
        store,
        "purity",
        _EVIDENCE_TABLES,
        code,
        lambda: evidence_purity(store, embedder, threshold),
        keep_if=lambda p: p["purity"] > threshold,  # the concept_purity contract's failure is judged afresh
    )
    return figures


def grounding(store: CorpusStore) -> dict:
    """Every active evidence span of every live concept in a current segment re-read from the source message
    (`_grounding`; kept while its tables stand)."""
    code = memo.code_digest([sys.modules[__name__], memory_core.ontology, store_schema])
    tables = (*_EVIDENCE_TABLES, ("staging", "segments"))
    figures, _ = memo.kept_or_computed(
        store,
        "grounding",
        tables,
        code,
        lambda: _grounding(store),
        keep_if=lambda g: g["ungrounded_concepts"] == 0,  # a contract's failure is judged afresh
    )
    return figures


def _grounding(store: CorpusStore) -> dict:
    """Every active evidence span of every live concept in a current segment re-read from the source message.

    Evidence read in a segment that a changed conversation retired is not checked here: the revision layer
    re-grounds it (rejected / stale) and repairs its concept. A live concept with no active evidence in a
    current segment is ungrounded unless it is awaiting that revision (evidence in retired segments, or
    trust broken / stale: queued for repair); those are counted apart (`awaiting_revision`)."""
    live = canonical_concepts.c.state.in_(LIVE_STATES)
    current = segments.c.superseded_at.is_(None)
    evidence = concept_evidence.join(
        canonical_concepts, canonical_concepts.c.concept_id == concept_evidence.c.concept_id
    ).join(segments, segments.c.segment_id == concept_evidence.c.segment_id)
    with store.staging.connect() as conn:
        spans = conn.execute(
            select(
                concept_evidence.c.concept_id,
                concept_evidence.c.message_id,
                concept_evidence.c.span_start,
                concept_evidence.c.span_end,
                concept_evidence.c.text,
            )
            .select_from(evidence)
            .where(live, current, concept_evidence.c.status == "active")
        ).all()
        concepts = conn.execute(select(func.count()).where(live)).scalar_one()
        pending = set(
            conn.execute(
                select(concept_evidence.c.concept_id).select_from(evidence).where(live, ~current)
            ).scalars()
        ) | set(
            conn.execute(
                select(canonical_concepts.c.concept_id).where(
                    live, canonical_concepts.c.trust.in_(("broken", "stale"))
                )
            ).scalars()
        )
    by_message: dict[str, list] = defaultdict(list)
    for span in spans:
        by_message[span.message_id].append(span)
    message_ids = sorted(by_message)
    bad_concepts = set()
    bad_spans = []
    with store.source.connect() as conn:
        for i in range(0, len(message_ids), _CHUNK):  # message texts a chunk at a time, never all at once
            chunk = message_ids[i : i + _CHUNK]
            texts = dict(
                conn.execute(
                    select(messages.c.message_id, messages.c.text).where(messages.c.message_id.in_(chunk))
                ).all()
            )
            for message_id in chunk:
                text = texts.get(message_id)
                for s in by_message[message_id]:
                    if text is None or text[s.span_start : s.span_end] != s.text:
                        bad_concepts.add(s.concept_id)
                        bad_spans.append(
                            {
                                "concept_id": s.concept_id,
                                "message_id": message_id,
                                "span": [s.span_start, s.span_end],
                            }
                        )
    grounded = {s.concept_id for s in spans}
    awaiting = len(pending - grounded)
    without_evidence = concepts - len(grounded) - awaiting
    ungrounded = len(bad_concepts) + without_evidence
    judged = concepts - awaiting
    return {
        "concepts": concepts,
        "evidence_spans": len(spans),
        "grounding": round((judged - ungrounded) / judged, 4) if judged else 1.0,
        "ungrounded_concepts": ungrounded,
        "awaiting_revision": awaiting,
        "bad_spans": bad_spans[:20],
    }


def totals(store: CorpusStore) -> dict:
    with store.staging.connect() as conn:
        n_mentions = conn.execute(select(func.count()).select_from(mentions)).scalar_one()
        linked = conn.execute(
            select(func.count()).where(mentions.c.consolidated_id.is_not(None))
        ).scalar_one()
        rejected = conn.execute(
            select(func.count(func.distinct(residuals.c.mention_id))).where(
                residuals.c.stage == CONSOLIDATION_STAGE
            )
        ).scalar_one()
        by_state = dict(
            conn.execute(
                select(canonical_concepts.c.state, func.count()).group_by(canonical_concepts.c.state)
            ).all()
        )
    live = sum(by_state.get(s, 0) for s in LIVE_STATES)
    return {
        "mentions": n_mentions,
        "mentions_linked": linked,
        "mentions_rejected": rejected,
        "mentions_pending": n_mentions - linked - rejected,
        "concepts": live,
        "concepts_active": by_state.get("active", 0),
        "concepts_weak": by_state.get("weak", 0),
        "compression": round(linked / live, 3) if live else 0.0,
        "residual_share": round(rejected / n_mentions, 4) if n_mentions else 0.0,
    }


def by_type_and_state(store: CorpusStore) -> list[dict]:
    """Concept counts per type and state (every state, live or not), one row per type."""
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(canonical_concepts.c.type, canonical_concepts.c.state, func.count()).group_by(
                canonical_concepts.c.type, canonical_concepts.c.state
            )
        ).all()
    table: dict[str, dict] = {}
    for type_, state, n in rows:
        table.setdefault(type_, {"type": type_, "total": 0})
        table[type_][state] = n
        table[type_]["total"] += n
    return sorted(table.values(), key=lambda r: (-r["total"], r["type"]))


def concept_sample(store: CorpusStore, limit: int = 15, spans_per_concept: int = 3) -> str:
    """Markdown: live concepts with their first evidence spans and message ids, taken round-robin over the
    types (best supported first within each), so facts show as well as the names they mention."""
    with store.staging.connect() as conn:
        rows = (
            conn.execute(
                select(canonical_concepts)
                .where(canonical_concepts.c.state.in_(LIVE_STATES))
                .order_by(
                    canonical_concepts.c.support_count.desc(),
                    canonical_concepts.c.confidence.desc(),
                    canonical_concepts.c.concept_id,
                )
                .limit(limit * 50)  # enough of every type for the round-robin, never the whole table
            )
            .mappings()
            .all()
        )
    if not rows:
        return "_no concepts yet_"
    by_type: dict[str, list] = defaultdict(list)
    for r in rows:
        by_type[r["type"]].append(r)
    picked = []
    while len(picked) < limit and any(by_type.values()):
        for type_ in sorted(by_type, key=lambda t: -len(by_type[t])):
            if by_type[type_] and len(picked) < limit:
                picked.append(by_type[type_].pop(0))
    out = []
    for r in picked:
        aliases = ", ".join(r["aliases"][:5]) or "—"
        out.append(
            f"**{_md(r['title'])}** ({r['type']}, {r['state']}, confidence {r['confidence']:.2f}, "
            f"{r['support_count']} evidence, rev {r['revision_count']}) `{r['concept_id']}`  \n"
            f"{_md(r['description'])}  \naliases: {_md(aliases)}; seen {r['first_seen']:%Y-%m-%d} → {r['last_seen']:%Y-%m-%d}"
        )
        for span in r["evidence_spans"][:spans_per_concept]:
            out.append(
                f"- “{_md(span['text'][:200])}” — message `{span['message_id']}` [{span['char_start']}:{span['char_end']}]"
            )
        out.append("")
    return "\n".join(out)


def _md(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|").replace("*", "\\*")

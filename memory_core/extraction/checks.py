"""Contracts of the extraction stage (the seed's bars), evaluated on what is stored (the asset checks wrap
these)."""

from __future__ import annotations

import sys

from sqlalchemy import func, select

from memory_core.extraction.quality import message_texts, reaction_quality
from memory_core.reports import CheckResult
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore
from memory_core.store.schema import mentions, segment_extractions, segments

REACTION_SCHEMA_VALIDITY_MIN = 0.99
VOCABULARY_COVERAGE_MIN = 0.95


_SPAN_TABLES = (("staging", "mentions"), ("staging", "segments"), ("source", "messages"))


def mention_spans_verbatim(store: CorpusStore) -> CheckResult:
    """Every mention of a current segment has as surface its message's text between the offsets, inside its
    segment's piece. Mentions of segments a changed conversation retired are not checked: their source may
    have changed on purpose, and the revision layer re-grounds what was built on them. (A pass stands while
    the three tables do: memory_core.store.memo.)"""
    code = memo.code_digest([sys.modules[__name__], store_schema])
    return memo.kept_check(
        store, "mention_spans_verbatim", _SPAN_TABLES, code, lambda: _spans_verbatim(store)
    )


def _spans_verbatim(store: CorpusStore) -> CheckResult:
    current = segments.c.superseded_at.is_(None)
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(
                mentions.c.mention_id,
                mentions.c.segment_id,
                mentions.c.message_id,
                mentions.c.span_start,
                mentions.c.span_end,
                mentions.c.surface,
            )
            .join(segments, segments.c.segment_id == mentions.c.segment_id)
            .where(current)
        ).all()
        retired = conn.execute(
            select(func.count())
            .select_from(mentions.join(segments, segments.c.segment_id == mentions.c.segment_id))
            .where(~current)
        ).scalar_one()
        pieces: dict[str, list[dict]] = {
            r.segment_id: r.message_spans
            for r in conn.execute(select(segments.c.segment_id, segments.c.message_spans).where(current))
        }
    texts = message_texts(store, {r.message_id for r in rows})
    not_verbatim = outside = 0
    for r in rows:
        text = texts.get(r.message_id)
        if text is None or text[r.span_start : r.span_end] != r.surface or not r.surface:
            not_verbatim += 1
            continue
        spans = [p for p in pieces.get(r.segment_id, []) if p["message_id"] == r.message_id]
        if not any(p["start"] <= r.span_start and r.span_end <= p["end"] for p in spans):
            outside += 1
    total = len(rows)
    return CheckResult(
        not_verbatim == 0 and outside == 0,
        {
            "mentions": total,
            "not_verbatim": not_verbatim,
            "outside_segment": outside,
            "verbatim_rate": round((total - not_verbatim) / total, 4) if total else 1.0,
            "mentions_of_retired_segments": retired,
        },
    )


def every_segment_extracted(store: CorpusStore) -> CheckResult:
    """Every current segment has been answered by the teacher; none is pending after an LLM outage."""
    done = segment_extractions.c.status == "done"
    with store.staging.connect() as conn:
        current = conn.execute(
            select(func.count()).select_from(segments).where(segments.c.superseded_at.is_(None))
        ).scalar_one()
        answered = conn.execute(
            select(func.count(func.distinct(segment_extractions.c.segment_id)))
            .select_from(
                segment_extractions.join(segments, segments.c.segment_id == segment_extractions.c.segment_id)
            )
            .where(segments.c.superseded_at.is_(None), done)
        ).scalar_one()
        pending = conn.execute(
            select(func.count())
            .select_from(segment_extractions)
            .where(segment_extractions.c.status == "pending")
        ).scalar_one()
    return CheckResult(
        answered >= current and pending == 0,
        {"current_segments": current, "answered": answered, "pending": pending},
    )


def reaction_schema_validity(store: CorpusStore) -> CheckResult:
    """The teacher's reactions are schema-valid at least `REACTION_SCHEMA_VALIDITY_MIN` of the time and no
    stored one fails re-validation."""
    q = reaction_quality(store)
    return CheckResult(
        q.schema_validity >= REACTION_SCHEMA_VALIDITY_MIN and q.stored_invalid == 0,
        {
            "schema_validity": q.schema_validity,
            "proposed": q.proposed,
            "schema_valid": q.schema_valid,
            "stored_invalid": q.stored_invalid,
        },
    )


def reaction_vocabulary_coverage(store: CorpusStore) -> CheckResult:
    """At least `VOCABULARY_COVERAGE_MIN` of the reactions are on the controlled vocabulary (not Other)."""
    q = reaction_quality(store)
    return CheckResult(
        q.share_not_other >= VOCABULARY_COVERAGE_MIN,
        {"share_not_other": q.share_not_other, "reactions": q.reactions},
    )


def reaction_timestamps_and_evidence(store: CorpusStore) -> CheckResult:
    """No reaction without a timestamp; every cue is verbatim in its message."""
    q = reaction_quality(store)
    return CheckResult(
        q.null_timestamps == 0 and q.cues_not_verbatim == 0,
        {
            "null_timestamp_rate": q.null_timestamp_rate,
            "cues_not_verbatim": q.cues_not_verbatim,
            "reactions": q.reactions,
        },
    )

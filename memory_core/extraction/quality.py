"""Contracts of the extraction stage, computed from what is stored (asset checks call these)."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from memory_core.ontology.reactions import UserReaction
from memory_core.store.db import CorpusStore
from memory_core.store.schema import mentions, messages, segment_extractions, segments, user_reactions


def _texts(store: CorpusStore, ids: set[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    ids_list = list(ids)
    with store.source.connect() as conn:
        for i in range(0, len(ids_list), 500):
            chunk = ids_list[i : i + 500]
            out.update(
                {
                    r.message_id: r.text
                    for r in conn.execute(
                        select(messages.c.message_id, messages.c.text).where(messages.c.message_id.in_(chunk))
                    )
                }
            )
    return out


def verify_mentions(store: CorpusStore) -> dict:
    """Every mention's surface is its message's text between the offsets, inside its segment's piece."""
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
        ).all()
        pieces: dict[str, list[dict]] = {
            r.segment_id: r.message_spans
            for r in conn.execute(select(segments.c.segment_id, segments.c.message_spans))
        }
    texts = _texts(store, {r.message_id for r in rows})
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
    return {
        "mentions": total,
        "not_verbatim": not_verbatim,
        "outside_segment": outside,
        "verbatim_rate": round((total - not_verbatim) / total, 4) if total else 1.0,
    }


def reaction_quality(store: CorpusStore) -> dict:
    """Stored reactions: schema validity (as proposed by the teacher, and re-validated as stored), share on
    the controlled vocabulary (not Other), NULL timestamps, cues verbatim in their messages."""
    with store.reflective.connect() as conn:
        rows = conn.execute(select(user_reactions)).mappings().all()
    with store.staging.connect() as conn:
        proposed = valid = 0
        for r in conn.execute(select(segment_extractions.c.stats)):
            proposed += int((r.stats or {}).get("reactions_proposed_raw", 0))
            valid += int((r.stats or {}).get("reactions_schema_valid", 0))
    texts = _texts(store, {r["message_id"] for r in rows})
    states: Counter = Counter()
    invalid_stored = null_times = bad_cues = 0
    for r in rows:
        states[r["state"]] += 1
        try:
            UserReaction(
                state=r["state"],
                state_raw=r["state_raw"],
                intensity=r["intensity"],
                valence=r["valence"],
                epistemic_status=r["epistemic_status"],
                evidence_message_id=r["message_id"],
            )
        except ValueError:
            invalid_stored += 1
        null_times += r["occurred_at"] is None
        text = texts.get(r["message_id"])
        bad_cues += text is None or text[r["span_start"] : r["span_end"]] != r["evidence_text"]
    total = len(rows)
    return {
        "reactions": total,
        "proposed": proposed,
        "schema_valid": valid,
        "schema_validity": round(valid / proposed, 4) if proposed else 1.0,
        "stored_invalid": invalid_stored,
        "share_not_other": round(1 - states["Other"] / total, 4) if total else 1.0,
        "null_timestamps": null_times,
        "null_timestamp_rate": round(null_times / total, 4) if total else 0.0,
        "cues_not_verbatim": bad_cues,
        "by_state": dict(states.most_common()),
    }

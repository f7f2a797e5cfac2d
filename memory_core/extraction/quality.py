"""Quality of what the extraction stage stored, measured from the stores (the `user_reactions` report and
the stage's contracts in `checks` use it)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import select

from memory_core.ontology.reactions import UserReaction
from memory_core.reports import share
from memory_core.store.db import CorpusStore
from memory_core.store.schema import messages, segment_extractions, user_reactions


def message_texts(store: CorpusStore, ids: set[str]) -> dict[str, str]:
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


@dataclass(frozen=True)
class ReactionQuality:
    """Stored reactions: schema validity (as proposed by the teacher, and re-validated as stored), share on
    the controlled vocabulary (not Other), NULL timestamps, cues verbatim in their messages."""

    reactions: int
    proposed: int
    schema_valid: int
    schema_validity: float
    stored_invalid: int
    share_not_other: float
    null_timestamps: int
    null_timestamp_rate: float
    cues_not_verbatim: int
    by_state: dict[str, int]


def reaction_quality(store: CorpusStore) -> ReactionQuality:
    with store.reflective.connect() as conn:
        rows = conn.execute(select(user_reactions)).mappings().all()
    with store.staging.connect() as conn:
        proposed = valid = 0
        for r in conn.execute(select(segment_extractions.c.stats)):
            proposed += int((r.stats or {}).get("reactions_proposed_raw", 0))
            valid += int((r.stats or {}).get("reactions_schema_valid", 0))
    texts = message_texts(store, {r["message_id"] for r in rows})
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
    return ReactionQuality(
        reactions=total,
        proposed=proposed,
        schema_valid=valid,
        schema_validity=share(valid, proposed, empty=1.0),
        stored_invalid=invalid_stored,
        share_not_other=round(1 - states["Other"] / total, 4) if total else 1.0,
        null_timestamps=null_times,
        null_timestamp_rate=share(null_times, total),
        cues_not_verbatim=bad_cues,
        by_state=dict(states.most_common()),
    )

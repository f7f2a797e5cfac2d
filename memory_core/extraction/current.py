"""One current extraction per segment: when a teacher answers a segment another teacher had answered (the
corpus switched teachers), the other's extraction of that segment stops being memory.

Its mentions are deleted; those the memory loop had consolidated leave their concepts too. A concept
founded on a retired mention (its `create` row cites it) or left without evidence is removed - a
`rollback` row without a new state, so replay still reproduces the tables - and its other mentions go back
to the loop (unlinked), which decides them afresh; the new teacher's mentions then meet the concepts a
build with the new teacher alone would have had, not the union of both (issue 18: 14 + 9 mentions had made
13 concepts instead of 8), and a teacher switched back finds no concept left in the way. A concept that
only held some retired evidence keeps the rest (a `refine` row with its whole evidence).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, and_, delete, select, update

from memory_core.concepts import action_log
from memory_core.concepts.patches import EVIDENCE_ROWS
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.store import (
    CONSOLIDATION_STAGE,
    concept_to_row,
    delete_concepts,
    read_concepts,
    read_evidence,
    replace_evidence,
    update_concepts,
)
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.store.schema import action_log as action_log_table
from memory_core.store.schema import concept_evidence, mentions, residuals, segment_extractions

ACTOR = "extraction"
_CHUNK = 500


def _chunks(items: list, size: int = _CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def supersede_other_extractions(
    conn: Connection, segment_ids: set[str], extractor: str, now: datetime, run_id: str = ""
) -> dict[str, int]:
    """Inside the staging transaction that writes `extractor`'s answers for `segment_ids`: retire every
    other extractor's mentions of those segments and their evidence. Returns what it changed."""
    seg_ids = sorted(segment_ids)
    retired: set[str] = set()
    for chunk in _chunks(seg_ids):
        retired |= set(
            conn.execute(
                select(mentions.c.mention_id).where(
                    mentions.c.segment_id.in_(chunk), mentions.c.extractor != extractor
                )
            ).scalars()
        )
        conn.execute(
            delete(segment_extractions).where(
                segment_extractions.c.segment_id.in_(chunk), segment_extractions.c.extractor != extractor
            )
        )
    if not retired:
        return {"mentions_retired": 0, "concepts_trimmed": 0, "concepts_removed": 0}
    trimmed, removed = _retract_evidence(conn, retired, extractor, now, run_id)
    for chunk in _chunks(sorted(retired)):
        conn.execute(delete(mentions).where(mentions.c.mention_id.in_(chunk)))
        conn.execute(
            delete(residuals).where(
                and_(residuals.c.stage == CONSOLIDATION_STAGE, residuals.c.mention_id.in_(chunk))
            )
        )
    return {"mentions_retired": len(retired), "concepts_trimmed": trimmed, "concepts_removed": removed}


def _retract_evidence(
    conn: Connection, retired: set[str], extractor: str, now: datetime, run_id: str
) -> tuple[int, int]:
    """Remove the retired mentions' evidence from the live concepts holding it; remove the concepts
    founded on a retired mention or left bare (their other mentions go back to the loop)."""
    repair_rows_behind(conn)  # a row a dead consolidation left behind its log is trimmed as it stands
    owners: set[str] = set()
    for chunk in _chunks(sorted(retired)):
        owners |= set(
            conn.execute(
                select(concept_evidence.c.concept_id).where(concept_evidence.c.mention_id.in_(chunk))
            ).scalars()
        )
    concepts = read_concepts(conn, owners, states=LIVE_STATES)
    founders = _founding_mentions(conn, list(concepts))
    evidence = read_evidence(conn, concepts)
    records, trimmed, removed, unlinked = [], [], [], set()
    run_id = run_id or f"{ACTOR}:{now.isoformat()}"
    why = f"its evidence from another teacher's extraction was replaced by {extractor}'s"
    for cid, concept in concepts.items():
        rows = evidence[cid]
        keep = [r for r in rows if r["mention_id"] not in retired]
        prior = {**concept_to_row(concept), EVIDENCE_ROWS: rows}
        cited = sorted({r["message_id"] for r in rows})
        scores = {"evidence_before": len(rows), "evidence_after": len(keep)}
        if not keep or founders.get(cid) in retired:
            removed.append(cid)
            unlinked |= {r["mention_id"] for r in keep}
            records.append(
                action_log.ActionRecord.whole_row(
                    "rollback", ACTOR, cid, prior, None, why, cited, run_id, now, scores
                )
            )
            continue
        spans = {(r["segment_id"], r["message_id"], r["span_start"], r["span_end"]) for r in keep}
        concept.evidence_spans = [
            s
            for s in concept.evidence_spans
            if (s.source_id, s.message_id, s.char_start, s.char_end) in spans
        ]
        concept.recorded_at = now
        replace_evidence(conn, cid, keep)
        trimmed.append(concept)
        new = {**concept_to_row(concept), EVIDENCE_ROWS: keep}
        records.append(
            action_log.ActionRecord.whole_row(
                "refine", ACTOR, cid, prior, new, why, cited, run_id, now, scores
            )
        )
    update_concepts(conn, trimmed)
    for chunk in _chunks(removed):
        conn.execute(delete(concept_evidence).where(concept_evidence.c.concept_id.in_(chunk)))
    delete_concepts(conn, removed)
    for chunk in _chunks(sorted(unlinked)):
        conn.execute(update(mentions).where(mentions.c.mention_id.in_(chunk)).values(consolidated_id=None))
    action_log.append(conn, records)
    return len(trimmed), len(removed)


def _founding_mentions(conn: Connection, concept_ids: list[str]) -> dict[str, str]:
    """concept → the mention its `create` row consolidated (the one it was founded on)."""
    out: dict[str, str] = {}
    for chunk in _chunks(concept_ids):
        query = select(action_log_table.c.concept_id, action_log_table.c.mention_id).where(
            action_log_table.c.action == "create", action_log_table.c.concept_id.in_(chunk)
        )
        out.update({r.concept_id: r.mention_id for r in conn.execute(query) if r.mention_id})
    return out

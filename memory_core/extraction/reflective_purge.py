"""`memory-os reactions purge`: a corpus's reflective data removed from every place it reached.

A reaction is written once (the reflective store) but reaches further: the LLM answer it was read from
sits in the shared response cache, a rejected one's payload (or a failed answer's raw text) in
`residuals`, its node in the graph when the graph was built with reflective data, and - if a teacher
phrased the feeling as a concept ("The user feels anxious") - the concept layer. A purge removes it from
each of them: reactions deleted, the cached answers' reactions emptied (the concepts in them stay, so a
rebuild costs no new calls), reaction residuals deleted and failed answers' raw text redacted,
UserReaction nodes deleted, reflective concepts archived (an `archive` row in the ActionLog, actor
`reflective_purge`), and the purged messages tombstoned so no later extraction - a rebuild, another
teacher - writes a reaction on them again. SQLite files are then wiped of the freed pages. `residue`
counts what is left in each place (after a purge: 0 everywhere); the Dagster metadata is the asset
layer's part (`memory_assets.extraction.reflective_metadata`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from sqlalchemy import delete, select, update

from memory_core.concepts import action_log
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.concepts.store import concept_to_row, read_concepts, update_concepts
from memory_core.extraction.mapper import STAGE as RESIDUAL_STAGE
from memory_core.extraction.reflective import (
    all_message_ids,
    is_reflective,
    reaction_count,
    tombstone,
)
from memory_core.llm.cache import ResponseCache
from memory_core.ontology.concepts import LIVE_STATES
from memory_core.store.db import CorpusStore, utcnow, wipe_free_pages
from memory_core.store.schema import llm_calls, residuals, user_reactions

REACTION_LABEL = "UserReaction"  # the graph's node label of a reaction
ACTOR = "reflective_purge"
EXTRACTION_CALLS = "extraction"  # llm_calls.stage of the teacher's calls
# residual codes of a whole failed answer (its payload keeps the raw text, reactions included)
_FAILED_ANSWER = ("llm_unavailable", "teacher_invalid", "teacher_refused", "teacher_error")


class ReflectiveGraph(Protocol):
    """What the purge needs of a graph store (`memory_core.graph.GraphStore` is one)."""

    def delete_label(self, label: str) -> int: ...

    def counts(self): ...


@dataclass
class PurgeReport:
    scope: str  # all | expired
    reactions: int = 0
    cache_answers: int = 0
    residuals: int = 0
    graph_nodes: int = 0
    concepts_archived: int = 0
    tombstones: int = 0
    residue: dict[str, int] = field(default_factory=dict)

    def summary(self, corpus: str) -> str:
        left = ", ".join(f"{place} {n}" for place, n in self.residue.items())
        return (
            f"purged {self.reactions} reactions of {corpus} ({self.scope}): {self.cache_answers} cached LLM "
            f"answers redacted, {self.residuals} residuals, {self.graph_nodes} graph nodes, "
            f"{self.concepts_archived} reflective concepts archived, {self.tombstones} messages tombstoned; "
            f"left: {left}"
        )


def _secure_delete(conn) -> None:
    """SQLite overwrites what this connection deletes (instead of leaving it in free pages)."""
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql("PRAGMA secure_delete=ON")


def _redacted_answer(raw: str) -> str | None:
    """The answer without its reactions (None when it has none); an answer that is not readable JSON
    cannot be redacted piecewise and is emptied."""
    try:
        value = json.loads(raw)
    except ValueError:
        return "" if raw else None
    if not isinstance(value, dict) or not value.get("reactions"):
        return None
    return json.dumps({**value, "reactions": []})


def _is_reaction_residual(row) -> bool:
    payload = row.payload if isinstance(row.payload, dict) else {}
    return "reaction" in payload or "cue" in payload


def purge_reflective(
    store: CorpusStore,
    cache: ResponseCache | None = None,
    graphs: Sequence[ReflectiveGraph] = (),
    expired_only: bool = False,
    now: datetime | None = None,
    run_id: str = "",
) -> PurgeReport:
    """Purge the corpus's reactions (all, or those past retention) everywhere they reached. The caller
    holds the corpus write lock."""
    now = now or utcnow()
    report = PurgeReport("expired" if expired_only else "all")
    expired = user_reactions.c.expires_at.is_not(None) & (user_reactions.c.expires_at <= now)
    with store.reflective.connect() as conn:
        query = select(user_reactions.c.message_id, user_reactions.c.segment_id)
        rows = conn.execute(query.where(expired) if expired_only else query).all()
    segments = {r.segment_id for r in rows} if expired_only else None
    with store.reflective.begin() as conn:
        _secure_delete(conn)
        report.reactions = (
            conn.execute(
                delete(user_reactions).where(expired) if expired_only else delete(user_reactions)
            ).rowcount
            or 0
        )
    report.tombstones = tombstone(
        store, {r.message_id for r in rows} if expired_only else all_message_ids(store), report.scope, now
    )
    if cache is not None:
        report.cache_answers = cache.redact(_extraction_keys(store, segments), _redacted_answer)
    report.residuals = _purge_residuals(store, segments)
    report.graph_nodes = sum(graph.delete_label(REACTION_LABEL) for graph in graphs)
    if not expired_only:  # feelings read into concepts are the corpus's, not one expired reaction's
        report.concepts_archived = archive_reflective_concepts(store, now, run_id)
    for engine in (store.reflective, store.staging):
        wipe_free_pages(engine)
    report.residue = residue(store, cache, graphs)
    return report


def expire_reactions(
    store: CorpusStore, cache: ResponseCache | None = None, now: datetime | None = None
) -> int:
    """Retention, run by every extraction: the reactions past `expires_at` are purged as `purge_reflective`
    purges — deleted, tombstoned (a re-extraction, also one answered from the cache, does not bring them
    back), their cached answers and residuals redacted. Returns how many. The caller holds the write lock."""
    expired = user_reactions.c.expires_at.is_not(None) & (user_reactions.c.expires_at <= (now or utcnow()))
    with store.reflective.connect() as conn:
        if conn.execute(select(user_reactions.c.reaction_id).where(expired).limit(1)).first() is None:
            return 0  # the usual case: nothing expired, nothing to scan
    return purge_reflective(store, cache, (), expired_only=True, now=now).reactions


def _extraction_keys(store: CorpusStore, segments: set[str] | None) -> list[str]:
    query = select(llm_calls.c.cache_key, llm_calls.c.segment_id).where(llm_calls.c.stage == EXTRACTION_CALLS)
    with store.staging.connect() as conn:
        return [r.cache_key for r in conn.execute(query) if segments is None or r.segment_id in segments]


def _reflective_residuals(store: CorpusStore, segments: set[str] | None) -> tuple[list[int], dict[int, dict]]:
    """(ids of reaction residuals, id → redacted payload of failed answers holding reactions)."""
    reaction_ids: list[int] = []
    redacted: dict[int, dict] = {}
    with store.staging.connect() as conn:
        for row in conn.execute(select(residuals).where(residuals.c.stage == RESIDUAL_STAGE)):
            if segments is not None and row.segment_id not in segments:
                continue
            if _is_reaction_residual(row):
                reaction_ids.append(row.residual_id)
            elif row.reason_code in _FAILED_ANSWER and isinstance(row.payload, dict):
                raw = _redacted_answer(str(row.payload.get("raw") or ""))
                if raw is not None:
                    redacted[row.residual_id] = {**row.payload, "raw": raw}
    return reaction_ids, redacted


def _purge_residuals(store: CorpusStore, segments: set[str] | None) -> int:
    reaction_ids, redacted = _reflective_residuals(store, segments)
    with store.staging.begin() as conn:
        _secure_delete(conn)
        for i in range(0, len(reaction_ids), 500):
            conn.execute(delete(residuals).where(residuals.c.residual_id.in_(reaction_ids[i : i + 500])))
        for rid, payload in redacted.items():
            conn.execute(update(residuals).where(residuals.c.residual_id == rid).values(payload=payload))
    return len(reaction_ids) + len(redacted)


def _reflective_concepts(conn) -> list:
    return [
        c
        for c in read_concepts(conn, states=LIVE_STATES).values()
        if is_reflective(c.type, c.title, c.description, *(s.text for s in c.evidence_spans))
    ]


def archive_reflective_concepts(store: CorpusStore, now: datetime | None = None, run_id: str = "") -> int:
    """Archive the live concepts that are hypotheses about a person's feelings (see `is_reflective`), each
    with an `archive` row in the ActionLog."""
    now = now or utcnow()
    with store.staging.begin() as conn:
        repair_rows_behind(conn)  # archived as the rows stand after a dead consolidation's last batch
        found = _reflective_concepts(conn)
        records = []
        for concept in found:
            prior = concept_to_row(concept)
            concept.state, concept.trust, concept.recorded_at = "archived", "archived", now
            records.append(
                action_log.ActionRecord.whole_row(
                    "archive",
                    ACTOR,
                    concept.concept_id,
                    prior,
                    concept_to_row(concept),
                    "reflective content (a person's feelings) is kept out of the concept layer",
                    sorted({s.message_id for s in concept.evidence_spans}),
                    run_id or f"{ACTOR}:{now.isoformat()}",
                    now,
                )
            )
        update_concepts(conn, found)
        action_log.append(conn, records)
    return len(found)


def residue(
    store: CorpusStore, cache: ResponseCache | None = None, graphs: Sequence[ReflectiveGraph] = ()
) -> dict[str, int]:
    """What reflective data of the corpus is left, per place (0 everywhere after a purge of everything)."""
    left = {"reflective_store": reaction_count(store)}
    if cache is not None:
        answers = cache.answers(_extraction_keys(store, None))
        left["llm_cache"] = sum(1 for raw in answers.values() if _redacted_answer(raw) not in (None, ""))
    reaction_ids, redacted = _reflective_residuals(store, None)
    left["residuals"] = len(reaction_ids) + len(redacted)
    left["graph"] = sum(int((g.counts().nodes or {}).get(REACTION_LABEL, 0)) for g in graphs)
    with store.staging.connect() as conn:
        left["concept_layer"] = len(_reflective_concepts(conn))
    return left

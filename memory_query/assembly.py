"""Evidence assembly: the ranked messages of a finished `QueryState` as cited items (with the paths that found
each, their scores, and a precise excerpt), the concepts and topics reached, the user reactions behind the
items (only with psychological access) and the XML context."""

from __future__ import annotations

from datetime import datetime

from memory_query.evidence import (
    EXCERPT_CHARS,
    ConceptHit,
    EvidenceItem,
    MemoryAnswer,
    ReactionHit,
    render_context,
)
from memory_query.facts import annotate_facts
from memory_query.paths import REGISTRY
from memory_query.reader import ConceptTable, CorpusReader
from memory_query.state import ConceptMatch, QueryState

CONCEPT_HITS = 8  # concepts listed in an answer


def assemble(
    state: QueryState, order: list[int], as_of: datetime | None, psychological_access: bool
) -> MemoryAnswer:
    items = evidence_items(state, order)
    concepts = concept_hits(state.concepts, state.concept_match)
    annotate_facts(state, items, concepts)
    reader = state.reader
    answer = MemoryAnswer(
        question=state.question,
        corpus=reader.store.name,
        as_of=as_of,
        items=items,
        concepts=concepts,
        topics=state.topic_hits,
        reflective=reactions(reader, [i.message_id for i in items]) if psychological_access else [],
        context="",
        paths_available=paths_available(reader),
        timings_ms={},
    )
    answer.context = render_context(answer, include_reflective=psychological_access)
    return answer


def paths_available(reader: CorpusReader) -> dict[str, bool]:
    """Per registry path, whether the memory it reads was built (paths sharing a check ask it once)."""
    checked: dict[object, bool] = {}
    for path in REGISTRY:
        if path.available not in checked:
            checked[path.available] = path.available(reader)
    return {path.name: checked[path.available] for path in REGISTRY}


def _concept_spans(
    state: QueryState, found: dict[int, set[str]], order: list[int]
) -> dict[int, tuple[int, int, str]]:
    """Per message position of `order`, the first concept evidence span inside it (for a precise excerpt):
    only the messages shown are looked up (a concept told of in thousands of messages has as many spans)."""
    spans: dict[int, tuple[int, int, str]] = {}
    concepts, ids = state.concepts, state.table.ids
    for ci, found_ids in found.items():
        wanted = {mi for mi in order if mi not in spans and ids[mi] in found_ids}
        for mi, _conf, start, end in concepts.evidence[ci] if wanted else ():
            if mi in wanted:
                spans[mi] = (start, end, concepts.ids[ci])
                wanted.discard(mi)
                if not wanted:
                    break
    return spans


def evidence_items(state: QueryState, order: list[int]) -> list[EvidenceItem]:
    table, settings, match = state.table, state.settings, state.concept_match
    texts = state.reader.message_texts([table.ids[i] for i in order])
    found = {ci: set(ids) for ci, ids in match.evidence.items()} if match else {}
    spans = _concept_spans(state, found, order)
    concept_ids = state.concepts.ids
    fused_paths = [p.name for p in settings.paths() if settings.weight(p.name) > 0]
    items = []
    for mi in order:
        mid = table.ids[mi]
        text, attrs = texts.get(mid, ("", {}))
        start, end = _excerpt_window(len(text), spans.get(mi))
        channel = {name: float(scores[mi]) for name, scores in state.scores.items()}
        items.append(
            EvidenceItem(
                message_id=mid,
                conversation_id=table.conv_ids[table.conversation[mi]],
                conversation_ref=table.conv_refs[table.conversation[mi]],
                source_ref=table.source_ref[mi],
                role=str(table.role[mi]),
                author=table.author[mi],
                created_at=table.created_at[mi].astype("datetime64[us]").astype(datetime),
                time_derived=bool(table.time_derived[mi]),
                text=text[start:end],
                span_start=start,
                span_end=end,
                score=float(state.fused[mi]),
                paths=[p for p in fused_paths if channel[p] >= settings.path_floor],
                channel_scores={k: round(v, 4) for k, v in channel.items() if v},
                concept_ids=[concept_ids[ci] for ci, ids in found.items() if mid in ids],
                on_active_branch=attrs.get("on_active_branch", True) is not False,
            )
        )
    return items


def _excerpt_window(length: int, span: tuple | None) -> tuple[int, int]:
    """The excerpt of a message to show: all of it when short, else a window around the matched concept
    span (or the start)."""
    if length <= EXCERPT_CHARS:
        return 0, length
    if span is None:
        return 0, EXCERPT_CHARS
    centre = (span[0] + span[1]) // 2
    start = max(0, min(centre - EXCERPT_CHARS // 2, length - EXCERPT_CHARS))
    return start, start + EXCERPT_CHARS


def concept_hits(concepts: ConceptTable, match: ConceptMatch | None) -> list[ConceptHit]:
    if match is None:
        return []
    rows = concepts.rows
    hits = []
    for ci in match.top[:CONCEPT_HITS]:
        row = rows[ci]
        hits.append(
            ConceptHit(
                concept_id=row["concept_id"],
                title=row["title"],
                type=row["type"],
                description=row["description"],
                confidence=float(row["confidence"]),
                trust=row["trust"],
                first_seen=row["first_seen"],
                last_seen=row["last_seen"],
                score=float(match.score[ci]),
                evidence_message_ids=match.evidence.get(ci, [])[:10],
                paths=["concept"],
            )
        )
    return [h for h in hits if h.evidence_message_ids]


def reactions(reader: CorpusReader, message_ids: list[str]) -> list[ReactionHit]:
    from sqlalchemy import select

    from memory_core.store.schema import user_reactions

    if not message_ids:
        return []
    with reader.store.reflective.connect() as conn:
        rows = (
            conn.execute(select(user_reactions).where(user_reactions.c.message_id.in_(message_ids)))
            .mappings()
            .all()
        )
    return [
        ReactionHit(
            reaction_id=r["reaction_id"],
            message_id=r["message_id"],
            state=r["state"] if r["state"] != "Other" else f"Other:{r['state_raw']}",
            intensity=float(r["intensity"]),
            valence=r["valence"],
            epistemic_status=r["epistemic_status"],
            evidence_text=r["evidence_text"],
            occurred_at=r["occurred_at"],
            topic_id=r["topic_id"],
        )
        for r in rows
    ]

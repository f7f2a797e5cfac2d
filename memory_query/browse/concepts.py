"""Concepts as a person reads them: a filtered list, and one concept's page — what it is, the evidence spans
it rests on, its relations and topics, the facts its claims opened, and every decision made about it (the
memory loop's action log, the revision layer's, the gardener's actions)."""

from __future__ import annotations

from sqlalchemy import Text, cast, func, or_, select

from memory_core.store.schema import (
    action_log,
    anchor_entities,
    canonical_concepts,
    concept_evidence,
    conversations,
    fact_states,
    gardener_actions,
    mentions,
    messages,
    topic_concept_links,
    topics,
)
from memory_query.browse.models import (
    ConceptAction,
    ConceptList,
    ConceptPage,
    ConceptRelation,
    ConceptRow,
    EvidenceSpan,
    FactTimelineEntry,
    TopicLink,
)
from memory_query.reader import CorpusReader

LIVE = ("active", "weak")
EVIDENCE_SHOWN = 50
CONTEXT = 90  # characters of a message shown on each side of an evidence span
ACTIONS_SHOWN = 50
_ROW = (
    canonical_concepts.c.concept_id,
    canonical_concepts.c.title,
    canonical_concepts.c.type,
    canonical_concepts.c.state,
    canonical_concepts.c.trust,
    canonical_concepts.c.confidence,
    canonical_concepts.c.support_count,
    canonical_concepts.c.first_seen,
    canonical_concepts.c.last_seen,
)


def _row(r) -> ConceptRow:
    return ConceptRow(
        concept_id=r.concept_id,
        title=r.title,
        type=r.type,
        state=r.state,
        trust=r.trust,
        confidence=round(float(r.confidence), 3),
        support_count=r.support_count,
        first_seen=r.first_seen,
        last_seen=r.last_seen,
    )


def concept_list(
    reader: CorpusReader,
    query: str = "",
    concept_type: str = "",
    offset: int = 0,
    limit: int = 50,
    live_only: bool = True,
) -> ConceptList:
    """Concepts with the most support first; `query` keeps titles and descriptions holding it, `concept_type`
    one type; `live_only` the active and weak ones."""
    k = canonical_concepts.c
    where = [k.state.in_(LIVE)] if live_only else []
    if query.strip():
        like = f"%{query.strip()}%"
        where.append(or_(k.title.ilike(like), k.description.ilike(like)))
    typed = [*where, k.type == concept_type] if concept_type else where
    with reader.store.staging.connect() as conn:
        types = dict(conn.execute(select(k.type, func.count()).where(*where).group_by(k.type)).all())
        total = conn.execute(select(func.count()).select_from(canonical_concepts).where(*typed)).scalar_one()
        rows = conn.execute(
            select(*_ROW)
            .where(*typed)
            .order_by(k.support_count.desc(), k.confidence.desc(), k.concept_id)
            .offset(max(0, offset))
            .limit(max(1, min(limit, 500)))
        ).all()
    return ConceptList(
        corpus=reader.store.name,
        rows=[_row(r) for r in rows],
        total=total,
        offset=offset,
        limit=limit,
        query=query,
        type=concept_type,
        types=dict(sorted(types.items(), key=lambda t: -t[1])),
    )


def concept_page(reader: CorpusReader, concept_id: str) -> ConceptPage | None:
    """Everything memory holds about one concept, or None when it has no such concept."""
    k = canonical_concepts.c
    with reader.store.staging.connect() as conn:
        row = conn.execute(
            select(*_ROW, k.description, k.aliases, k.relations, k.revision_count, k.merged_into).where(
                k.concept_id == concept_id
            )
        ).first()
        if row is None:
            return None
        titles = _titles(conn, [r["target_id"] for r in row.relations or []] + [row.merged_into or ""])
        evidence_rows, evidence_total = _evidence_rows(conn, concept_id)
        topic_rows = conn.execute(
            select(topic_concept_links.c.topic_id, topics.c.label, topic_concept_links.c.weight)
            .select_from(
                topic_concept_links.join(topics, topics.c.topic_id == topic_concept_links.c.topic_id)
            )
            .where(topic_concept_links.c.concept_id == concept_id)
            .order_by(topic_concept_links.c.weight.desc())
            .limit(20)
        ).all()
        anchors = conn.execute(
            select(anchor_entities.c.label).where(anchor_entities.c.concept_id == concept_id)
        ).scalars()
        anchors = list(anchors)
        facts = _facts(conn, concept_id)
        actions, actions_total = _log(conn, concept_id)
        gardener = _gardener(conn, concept_id)
    return ConceptPage(
        corpus=reader.store.name,
        concept=_row(row),
        description=row.description,
        aliases=list(row.aliases or []),
        revision_count=row.revision_count,
        merged_into=row.merged_into or None,
        merged_into_title=titles.get(row.merged_into or ""),
        evidence=_evidence(reader, evidence_rows),
        evidence_total=evidence_total,
        relations=[
            ConceptRelation(
                relation=r["relation"],
                target=titles.get(r["target_id"], r["target_id"]),
                target_id=r["target_id"] if r["target_id"] in titles else None,
                confidence=r.get("confidence"),
            )
            for r in row.relations or []
        ],
        topics=[TopicLink(topic_id=t.topic_id, label=t.label, weight=round(t.weight, 1)) for t in topic_rows],
        anchors=anchors,
        facts=facts,
        actions=actions,
        actions_total=actions_total,
        gardener=gardener,
    )


def _titles(conn, concept_ids: list[str]) -> dict[str, str]:
    wanted = [c for c in set(concept_ids) if c]
    if not wanted:
        return {}
    k = canonical_concepts.c
    return dict(conn.execute(select(k.concept_id, k.title).where(k.concept_id.in_(wanted))).all())


def _evidence_rows(conn, concept_id: str) -> tuple[list, int]:
    """The concept's evidence spans, newest message first (at most `EVIDENCE_SHOWN`), and how many it has."""
    e = concept_evidence.c
    total = conn.execute(
        select(func.count()).select_from(concept_evidence).where(e.concept_id == concept_id)
    ).scalar_one()
    rows = conn.execute(
        select(e.message_id, e.span_start, e.span_end, e.text, e.status, e.confidence, mentions.c.message_created_at)
        .select_from(concept_evidence.join(mentions, mentions.c.mention_id == e.mention_id))
        .where(e.concept_id == concept_id)
        .order_by(mentions.c.message_created_at.desc(), e.message_id)
        .limit(EVIDENCE_SHOWN)
    ).all()  # fmt: skip
    return rows, total


def _evidence(reader: CorpusReader, rows) -> list[EvidenceSpan]:
    """Evidence rows with their message's author and conversation (from the source store)."""
    ids = list({r.message_id for r in rows})
    m, c = messages.c, conversations.c
    with reader.store.source.connect() as conn:
        meta = {
            r.message_id: r
            for r in conn.execute(
                select(m.message_id, m.conversation_id, m.author, m.created_at, m.text, c.title)
                .select_from(messages.join(conversations, c.conversation_id == m.conversation_id))
                .where(m.message_id.in_(ids))
            )
        }
    out = []
    for r in rows:
        info = meta.get(r.message_id)
        if info is None:  # a message the source no longer holds
            continue
        out.append(
            EvidenceSpan(
                message_id=r.message_id,
                conversation_id=info.conversation_id,
                conversation_title=info.title or "(untitled)",
                author=info.author,
                created_at=info.created_at,
                span_start=r.span_start,
                span_end=r.span_end,
                text=r.text,
                before=_words_before(info.text, r.span_start),
                after=_words_after(info.text, r.span_end),
                status=r.status,
                confidence=round(float(r.confidence), 3),
            )
        )
    return out


def _words_before(text: str, start: int, size: int = CONTEXT) -> str:
    """Up to `size` characters of `text` before `start`, from a word's beginning, on one line."""
    head = text[max(0, start - size) : start]
    if start > size and " " in head:
        head = "…" + head[head.index(" ") + 1 :]
    return " ".join(head.split(" ")).replace("\n", " ")


def _words_after(text: str, end: int, size: int = CONTEXT) -> str:
    """Up to `size` characters of `text` after `end`, to a word's end, on one line."""
    tail = text[end : end + size]
    if end + size < len(text) and " " in tail:
        tail = tail[: tail.rindex(" ")] + "…"
    return tail.replace("\n", " ")


def _facts(conn, concept_id: str) -> list[FactTimelineEntry]:
    """The fact states the concept's claims opened, as memory believes them now, in valid-time order."""
    f = fact_states.c
    rows = conn.execute(
        select(f.fact_state_id, f.subject, f.subject_label, f.attribute, f.value, f.status, f.valid_from, f.valid_until, f.evidence_message_id, f.closed_by_message_id)
        .where(f.concept_id == concept_id, f.superseded_at.is_(None))
        .order_by(f.attribute, f.valid_from)
    ).all()  # fmt: skip
    return [
        FactTimelineEntry(
            fact_state_id=r.fact_state_id,
            subject=r.subject_label or r.subject or "",
            attribute=r.attribute,
            value=r.value,
            status=r.status or "",
            valid_from=r.valid_from,
            valid_until=r.valid_until,
            evidence_message_id=r.evidence_message_id,
            closed_by_message_id=r.closed_by_message_id,
        )
        for r in rows
    ]


def _log(conn, concept_id: str) -> tuple[list[ConceptAction], int]:
    """The action log's rows about the concept, newest first (at most `ACTIONS_SHOWN`), and how many."""
    a = action_log.c
    total = conn.execute(
        select(func.count()).select_from(action_log).where(a.concept_id == concept_id)
    ).scalar_one()
    rows = conn.execute(
        select(a.recorded_at, a.actor, a.action, a.rationale, a.cited_message_ids, a.run_id)
        .where(a.concept_id == concept_id)
        .order_by(a.action_id.desc())
        .limit(ACTIONS_SHOWN)
    ).all()
    return [
        ConceptAction(
            at=r.recorded_at,
            actor=r.actor,
            action=r.action,
            rationale=r.rationale,
            cited_message_ids=list(r.cited_message_ids or []),
            run_id=r.run_id,
        )
        for r in rows
    ], total


def _gardener(conn, concept_id: str) -> list[ConceptAction]:
    """The gardener's actions (applied, refused, rolled back) that named the concept, newest first."""
    g = gardener_actions.c
    # concept_ids is a JSON list: match its text first (portable), then keep exact members
    rows = conn.execute(
        select(g.recorded_at, g.action, g.rationale, g.cited_message_ids, g.run_id, g.status, g.concept_ids)
        .where(cast(g.concept_ids, Text).contains(concept_id))
        .order_by(g.recorded_at.desc())
        .limit(ACTIONS_SHOWN)
    ).all()
    return [
        ConceptAction(
            at=r.recorded_at,
            actor="gardener",
            action=r.action,
            rationale=r.rationale,
            cited_message_ids=list(r.cited_message_ids or []),
            run_id=r.run_id,
            status=r.status,
        )
        for r in rows
        if concept_id in (r.concept_ids or [])
    ]

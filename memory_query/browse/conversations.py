"""Conversations as a person reads them: the list, one conversation around a message (with the concepts each
message is evidence for), and where a message sits."""

from __future__ import annotations

from sqlalchemy import func, or_, select

from memory_core.store.schema import canonical_concepts, concept_evidence, conversations, messages
from memory_query.browse.models import (
    ConversationList,
    ConversationRow,
    ConversationView,
    MessageLocation,
    MessageView,
    SpanLink,
)
from memory_query.reader import CorpusReader

WINDOW = 200  # messages shown around the focus of a long conversation


def _row(r) -> ConversationRow:
    return ConversationRow(
        conversation_id=r.conversation_id,
        title=r.title or "(untitled)",
        source_ref=r.source_ref,
        created_at=r.created_at,
        message_count=r.message_count,
    )


def conversation_list(
    reader: CorpusReader, query: str = "", offset: int = 0, limit: int = 50
) -> ConversationList:
    """Conversations, newest first; `query` keeps those whose title or input id holds it."""
    c = conversations.c
    where = []
    if query.strip():
        like = f"%{query.strip()}%"
        where.append(or_(c.title.ilike(like), c.source_ref.ilike(like)))
    with reader.store.source.connect() as conn:
        total = conn.execute(select(func.count()).select_from(conversations).where(*where)).scalar_one()
        rows = conn.execute(
            select(c.conversation_id, c.title, c.source_ref, c.created_at, c.message_count)
            .where(*where)
            .order_by(c.created_at.desc(), c.conversation_id)
            .offset(max(0, offset))
            .limit(max(1, min(limit, 500)))
        ).all()
    return ConversationList(
        corpus=reader.store.name,
        rows=[_row(r) for r in rows],
        total=total,
        offset=offset,
        limit=limit,
        query=query,
    )


def locate_message(reader: CorpusReader, message_id: str) -> MessageLocation | None:
    """The conversation and position of a message, or None when this memory has no such message."""
    m = messages.c
    with reader.store.source.connect() as conn:
        row = conn.execute(select(m.conversation_id, m.position).where(m.message_id == message_id)).first()
    if row is None:
        return None
    return MessageLocation(message_id=message_id, conversation_id=row.conversation_id, position=row.position)


def conversation_view(
    reader: CorpusReader, conversation_id: str, focus: str | None = None, start: int | None = None
) -> ConversationView | None:
    """A conversation's messages in order with their concept spans: the whole of it, or for a long one a
    window of `WINDOW` messages around `focus` (a message id) or from position `start`. None when this memory
    has no such conversation."""
    c, m = conversations.c, messages.c
    with reader.store.source.connect() as conn:
        head = conn.execute(
            select(c.conversation_id, c.title, c.source_ref, c.created_at, c.message_count).where(
                c.conversation_id == conversation_id
            )
        ).first()
        if head is None:
            return None
        total = conn.execute(
            select(func.count()).select_from(messages).where(m.conversation_id == conversation_id)
        ).scalar_one()
        if start is None:
            start = 0
            if focus is not None:
                at = conn.execute(
                    select(m.position).where(m.message_id == focus, m.conversation_id == conversation_id)
                ).scalar()
                if at is not None:
                    start = max(0, _rank(conn, conversation_id, at) - WINDOW // 2)
        start = max(0, min(start, max(0, total - 1)))
        rows = conn.execute(
            select(m.message_id, m.position, m.role, m.author, m.created_at, m.time_derived, m.text, m.source_ref, m.attributes)
            .where(m.conversation_id == conversation_id)
            .order_by(m.position)
            .offset(start)
            .limit(WINDOW)
        ).all()  # fmt: skip
    spans = _concept_spans(reader, [r.message_id for r in rows])
    shown = [
        MessageView(
            message_id=r.message_id,
            position=r.position,
            role=r.role,
            author=r.author,
            created_at=r.created_at,
            time_derived=bool(r.time_derived),
            text=r.text,
            source_ref=r.source_ref,
            on_active_branch=(r.attributes or {}).get("on_active_branch", True) is not False,
            concepts=spans.get(r.message_id, []),
        )
        for r in rows
    ]
    return ConversationView(
        corpus=reader.store.name,
        conversation=_row(head),
        messages=shown,
        first_position=start,
        before=start,
        after=max(0, total - start - len(shown)),
        focus=focus,
    )


def _rank(conn, conversation_id: str, position: int) -> int:
    """How many messages of the conversation come before `position` (positions need not be dense)."""
    m = messages.c
    return conn.execute(
        select(func.count())
        .select_from(messages)
        .where(m.conversation_id == conversation_id, m.position < position)
    ).scalar_one()


def _concept_spans(reader: CorpusReader, message_ids: list[str]) -> dict[str, list[SpanLink]]:
    """Per message, the live concepts it is active evidence for, with the span of each. Two lookups by key,
    not a join: SQLite would walk every live concept's evidence for it (1.1 s at 7,800 concepts)."""
    if not message_ids:
        return {}
    e, k = concept_evidence.c, canonical_concepts.c
    with reader.store.staging.connect() as conn:
        rows = conn.execute(
            select(e.message_id, e.concept_id, e.span_start, e.span_end)
            .where(e.message_id.in_(message_ids), e.status == "active")
            .order_by(e.message_id, e.span_start)
        ).all()
        wanted = list({r.concept_id for r in rows})
        live = {
            c.concept_id: c
            for c in conn.execute(
                select(k.concept_id, k.title, k.type).where(
                    k.concept_id.in_(wanted), k.state.in_(("active", "weak"))
                )
            )
        }
    out: dict[str, list[SpanLink]] = {}
    for r in rows:
        concept = live.get(r.concept_id)
        links = out.setdefault(r.message_id, [])
        if concept is not None and all(link.concept_id != r.concept_id for link in links):
            links.append(
                SpanLink(
                    concept_id=r.concept_id,
                    title=concept.title,
                    type=concept.type,
                    span_start=r.span_start,
                    span_end=r.span_end,
                )
            )
    return {m: links for m, links in out.items() if links}

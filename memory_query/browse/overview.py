"""A corpus at a glance: how much memory holds, by kind."""

from __future__ import annotations

from sqlalchemy import func, select

from memory_core.store.schema import canonical_concepts, conversations, domains, fact_states, messages, topics
from memory_query.browse.models import CorpusSummary
from memory_query.reader import CorpusReader


def corpus_summary(reader: CorpusReader) -> CorpusSummary:
    k, f = canonical_concepts.c, fact_states.c
    with reader.store.source.connect() as conn:
        n_conversations = conn.execute(select(func.count()).select_from(conversations)).scalar_one()
        n_messages = conn.execute(select(func.count()).select_from(messages)).scalar_one()
        first, last = conn.execute(
            select(func.min(messages.c.created_at), func.max(messages.c.created_at))
        ).one()
    with reader.store.staging.connect() as conn:
        by_type = dict(
            conn.execute(
                select(k.type, func.count()).where(k.state.in_(("active", "weak"))).group_by(k.type)
            ).all()
        )
        n_topics = conn.execute(select(func.count()).select_from(topics)).scalar_one()
        n_domains = conn.execute(select(func.count()).select_from(domains)).scalar_one()
        believed = f.superseded_at.is_(None)
        n_states = conn.execute(select(func.count()).select_from(fact_states).where(believed)).scalar_one()
        n_subjects = conn.execute(select(func.count(func.distinct(f.subject))).where(believed)).scalar_one()
    return CorpusSummary(
        corpus=reader.store.name,
        conversations=n_conversations,
        messages=n_messages,
        concepts_live=sum(by_type.values()),
        concepts_by_type=dict(sorted(by_type.items(), key=lambda t: -t[1])),
        topics=n_topics,
        domains=n_domains,
        fact_states=n_states,
        subjects=n_subjects,
        first_message=first,
        last_message=last,
        built=n_messages > 0,
    )

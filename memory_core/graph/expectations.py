"""What the graph of a corpus must hold, counted in its tables with COUNT queries and joins, independently
of the exporter: the `graph` asset check compares it with the graph store's own counts."""

from __future__ import annotations

from sqlalchemy import Engine, and_, func, select

from memory_core.graph.export import current_segments, reaction_alive
from memory_core.graph.schema import CONCEPT_RELATION_TYPES, EDGE_TYPES, NODE_TYPES
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    concept_evidence,
    conversations,
    domains,
    fact_states,
    gardener_actions,
    mentions,
    messages,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
    user_reactions,
)


def _count(engine: Engine, stmt) -> int:
    with engine.connect() as conn:
        return int(conn.execute(stmt).scalar_one() or 0)


def expected_counts(store: CorpusStore, reflective: bool = False) -> dict[str, dict[str, int]]:
    """{"nodes": {label: n}, "edges": {type: n}} for every label and type (reflective ones 0 unless asked)."""
    src, stg, now = store.source, store.staging, utcnow()
    n = {label: 0 for label in NODE_TYPES}
    e = {t: 0 for t in EDGE_TYPES}
    cc, s, mn, ce, t, ln, a, d, f, g, ts = (
        canonical_concepts.c,
        segments.c,
        mentions.c,
        concept_evidence.c,
        topics.c,
        topic_concept_links.c,
        anchor_entities.c,
        domains.c,
        fact_states.c,
        gardener_actions.c,
        topic_segments.c,
    )
    n["Conversation"] = _count(src, select(func.count()).select_from(conversations))
    n["Message"] = _count(src, select(func.count()).select_from(messages))
    n["Segment"] = _count(stg, select(func.count()).select_from(segments).where(current_segments()))
    n["Concept"] = _count(stg, select(func.count()).select_from(canonical_concepts))
    n["Topic"] = _count(stg, select(func.count()).select_from(topics))
    n["AnchorEntity"] = _count(stg, select(func.count()).select_from(anchor_entities))
    n["Domain"] = _count(stg, select(func.count()).select_from(domains))
    n["FactState"] = _count(stg, select(func.count()).select_from(fact_states))
    n["GardenerAction"] = _count(stg, select(func.count()).select_from(gardener_actions))
    e["HAS_MESSAGE"] = n["Message"]
    chains = _count(src, select(func.count(func.distinct(messages.c.conversation_id))))
    e["NEXT"] = e["PREVIOUS"] = n["Message"] - chains
    e["CONTAINS_MESSAGE"] = _count(
        stg, select(func.sum(func.json_array_length(s.message_ids))).where(current_segments())
    )
    e["MENTIONS"] = _count(
        stg,
        select(func.count()).select_from(
            select(mn.segment_id, mn.consolidated_id)
            .join(segments, and_(s.segment_id == mn.segment_id, current_segments()))
            .join(canonical_concepts, cc.concept_id == mn.consolidated_id)
            .distinct()
            .subquery()
        ),
    )
    e["EVIDENCE_FOR"] = _count(
        stg,
        select(func.count()).select_from(
            concept_evidence.join(canonical_concepts, cc.concept_id == ce.concept_id)
        ),
    )
    e["RELATED_TO"] = _count(
        stg,
        select(func.count()).select_from(
            topic_concept_links.join(topics, t.topic_id == ln.topic_id).join(
                canonical_concepts, cc.concept_id == ln.concept_id
            )
        ),
    )
    e["HAS_STATE"] = _count(
        stg,
        select(func.count()).select_from(fact_states.join(canonical_concepts, cc.concept_id == f.concept_id)),
    )
    e["BELONGS_TO"] = (
        _count(
            stg,
            select(func.count()).select_from(
                topic_segments.join(segments, and_(s.segment_id == ts.segment_id, current_segments())).join(
                    topics, t.topic_id == ts.topic_id
                )
            ),
        )
        + _count(
            stg, select(func.count()).select_from(topics.join(anchor_entities, a.anchor_id == t.anchor_id))
        )
        + _count(
            stg, select(func.count()).select_from(anchor_entities.join(domains, d.domain_id == a.domain_id))
        )
        + _count(
            stg,
            select(func.count())
            .select_from(
                topics.join(domains, d.domain_id == t.domain_id).outerjoin(
                    anchor_entities, a.anchor_id == t.anchor_id
                )
            )
            .where(a.anchor_id.is_(None)),
        )
    )
    # ids inside JSON lists: counted here from the id columns, with the same existence rule
    with stg.connect() as conn:
        concept_ids = set(conn.execute(select(cc.concept_id)).scalars())
        for concept_id, relations in conn.execute(select(cc.concept_id, cc.relations)):
            pairs = {
                (CONCEPT_RELATION_TYPES[r["relation"]], r["target_id"])
                for r in relations or []
                if r.get("relation") in CONCEPT_RELATION_TYPES
                and r.get("target_id") in concept_ids
                and r["target_id"] != concept_id
            }
            for type_, _ in pairs:
                e[type_] += 1
        for ids in conn.execute(select(g.concept_ids)).scalars():
            e["ACTED_ON"] += len({c for c in ids or [] if c in concept_ids})
    if reflective:
        u = user_reactions.c
        n["UserReaction"] = _count(
            store.reflective, select(func.count()).select_from(user_reactions).where(reaction_alive(now))
        )
        with stg.connect() as conn:
            topic_ids = set(conn.execute(select(t.topic_id)).scalars())
        with store.reflective.connect() as conn:
            e["DURING"] = sum(
                1
                for tid in conn.execute(
                    select(u.topic_id).where(u.topic_id.is_not(None), reaction_alive(now))
                ).scalars()
                if tid in topic_ids
            )
    return {"nodes": n, "edges": e}

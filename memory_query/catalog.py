"""The node catalog the agent tools walk: any node of the hierarchy by id, its summary, and its neighbours
along each relation — read from the corpus's tables (the source of truth the graph is loaded from), so the
tools work whether or not a graph store was built."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select

from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    claims,
    concept_evidence,
    conversations,
    domains,
    fact_states,
    mentions,
    messages,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
)
from memory_query.reader import CorpusReader

NODE_TYPES = ("Domain", "AnchorEntity", "Topic", "Concept", "Segment", "Message", "Conversation", "FactState")
SNIPPET = 160

# relation name → (from type, to type); the default lens of a type walks its first relations
RELATIONS: dict[str, tuple[str, str]] = {
    "Domain>AnchorEntity": ("Domain", "AnchorEntity"),
    "Domain>Topic": ("Domain", "Topic"),
    "AnchorEntity>Topic": ("AnchorEntity", "Topic"),
    "AnchorEntity>Concept": ("AnchorEntity", "Concept"),
    "AnchorEntity>Domain": ("AnchorEntity", "Domain"),
    "Topic>Concept": ("Topic", "Concept"),
    "Topic>Segment": ("Topic", "Segment"),
    "Topic>Domain": ("Topic", "Domain"),
    "Concept>Message": ("Concept", "Message"),
    "Concept>Topic": ("Concept", "Topic"),
    "Concept>Segment": ("Concept", "Segment"),
    "Segment>Message": ("Segment", "Message"),
    "Segment>Topic": ("Segment", "Topic"),
    "Segment>Concept": ("Segment", "Concept"),
    "Message>Concept": ("Message", "Concept"),
    "Message>Segment": ("Message", "Segment"),
    "Message>NEXT": ("Message", "Message"),
    "Message>PREVIOUS": ("Message", "Message"),
    "Message>Conversation": ("Message", "Conversation"),
    "Conversation>Message": ("Conversation", "Message"),
    "Concept>FactState": ("Concept", "FactState"),  # HAS_STATE: the states its claims opened
    "Message>FactState": ("Message", "FactState"),  # the states the message is evidence of
    "FactState>HISTORY": ("FactState", "FactState"),  # every state of its (subject, slot), by valid time
    "FactState>SUPERSEDED_BY": ("FactState", "FactState"),
    "FactState>SUPERSEDES": ("FactState", "FactState"),
    "FactState>Message": ("FactState", "Message"),  # its evidence: the messages of its claims
    "FactState>Concept": ("FactState", "Concept"),
}


def relations_from(node_type: str) -> list[str]:
    return [name for name, (src, _) in RELATIONS.items() if src == node_type]


@dataclass
class NodeRef:
    type: str
    id: str
    label: str  # a short human label: a title, a snippet
    weight: float | None = None

    def as_dict(self) -> dict:
        d = {"type": self.type, "id": self.id, "label": self.label}
        if self.weight is not None:
            d["weight"] = round(self.weight, 3)
        return d


def _snip(text: str, size: int = SNIPPET) -> str:
    text = " ".join(text.split())
    return text if len(text) <= size else text[: size - 1] + "…"


class NodeCatalog:
    def __init__(self, reader: CorpusReader):
        self.reader = reader
        self.store = reader.store

    # ------------------------------------------------------------------------------------ lookup
    def find(self, node_id: str, node_type: str | None = None) -> tuple[str, dict] | None:
        """(type, row) of a node of this corpus, or None (unknown ids and ids of other corpora alike)."""
        for t in [node_type] if node_type else NODE_TYPES:
            row = self._row(t, node_id)
            if row is not None:
                return t, row
        return None

    def _row(self, node_type: str, node_id: str) -> dict | None:
        table, key, engine = {
            "Domain": (domains, domains.c.domain_id, self.store.staging),
            "AnchorEntity": (anchor_entities, anchor_entities.c.anchor_id, self.store.staging),
            "Topic": (topics, topics.c.topic_id, self.store.staging),
            "Concept": (canonical_concepts, canonical_concepts.c.concept_id, self.store.staging),
            "Segment": (segments, segments.c.segment_id, self.store.staging),
            "Message": (messages, messages.c.message_id, self.store.source),
            "Conversation": (conversations, conversations.c.conversation_id, self.store.source),
            "FactState": (fact_states, fact_states.c.fact_state_id, self.store.staging),
        }.get(node_type, (None, None, None))
        if table is None:
            return None
        with engine.connect() as conn:
            row = conn.execute(select(table).where(key == node_id)).mappings().first()
        return dict(row) if row else None

    def label(self, node_type: str, row: dict) -> str:
        if node_type in ("Domain", "Topic", "AnchorEntity"):
            return _snip(row.get("label") or "")
        if node_type == "Concept":
            return _snip(f"{row['title']}: {row['description']}")
        if node_type == "Message":
            return _snip(f"{row['author']}: {row['text']}")
        if node_type == "Segment":
            return _snip(row["text"])
        if node_type == "FactState":
            until = row["valid_until"].date().isoformat() if row["valid_until"] else "now"
            believed = "" if row["superseded_at"] is None else f"; revised {row['superseded_at']:%Y-%m-%d}"
            return _snip(
                f"{row['subject_label'] or row['subject']} {row['attribute']}: {row['value']} "
                f"({row['valid_from']:%Y-%m-%d} → {until}, {row['status']}{believed})"
            )
        return _snip(row.get("title") or row.get("source_ref") or "")

    def ref(self, node_type: str, node_id: str, weight: float | None = None) -> NodeRef | None:
        row = self._row(node_type, node_id)
        return NodeRef(node_type, node_id, self.label(node_type, row), weight) if row else None

    # ------------------------------------------------------------------------------------ neighbours
    def neighbour_ids(self, relation: str, node_id: str) -> list[tuple[str, float | None]]:
        """Every neighbour id along `relation` (weighted relations strongest first)."""
        if relation not in RELATIONS:
            raise ValueError(f"unknown relation {relation!r}; known: {', '.join(RELATIONS)}")
        stg, src = self.store.staging, self.store.source
        if relation in ("Message>NEXT", "Message>PREVIOUS"):
            return self._next(node_id, relation.endswith("NEXT"))
        if relation == "Segment>Message":
            with stg.connect() as conn:
                row = conn.execute(
                    select(segments.c.message_ids).where(segments.c.segment_id == node_id)
                ).first()
            return [(m, None) for m in (row.message_ids if row else [])]
        if relation == "Message>FactState":
            return self._message_facts(node_id)
        if relation.startswith("FactState>") and relation != "FactState>Concept":
            return self._fact_neighbours(relation, node_id)
        if relation == "Message>Segment":
            table = self.reader.segment_messages()
            index = self.reader.messages().index.get(node_id)
            return [(sid, None) for sid, members in table.items() if index is not None and index in members]
        engine = src if relation in _SOURCE_RELATIONS else stg
        with engine.connect() as conn:
            rows = conn.execute(_QUERIES[relation](node_id)).all()
        seen: dict[str, float | None] = {}
        for r in rows:
            if r[0] is not None and r[0] not in seen:
                seen[r[0]] = float(r[1]) if len(r) > 1 and r[1] is not None else None
        return list(seen.items())

    def _message_facts(self, message_id: str) -> list[tuple[str, float | None]]:
        """The believed states a message's claims support or close."""
        f = fact_states.c
        with self.store.staging.connect() as conn:
            mine = dict(
                conn.execute(
                    select(claims.c.claim_id, claims.c.attribute).where(claims.c.message_id == message_id)
                ).all()
            )
            if not mine:
                return []
            rows = conn.execute(
                select(f.fact_state_id, f.claim_ids, f.closed_by_claim_id)
                .where(f.superseded_at.is_(None), f.attribute.in_(set(mine.values())))
                .order_by(f.valid_from)
            ).all()
        return [
            (r.fact_state_id, None)
            for r in rows
            if set(r.claim_ids or ()) & set(mine) or r.closed_by_claim_id in mine
        ]

    def _fact_neighbours(self, relation: str, fact_state_id: str) -> list[tuple[str, float | None]]:
        """A FactState version's history, successor, predecessor or evidence, as memory believes them now
        (the successor and history of a version memory revised since: the current versions of its state)."""
        f = fact_states.c
        with self.store.staging.connect() as conn:
            row = conn.execute(select(fact_states).where(f.fact_state_id == fact_state_id)).mappings().first()
            if row is None:
                return []
            believed = f.superseded_at.is_(None)
            if relation == "FactState>Message":
                ids = list(row["claim_ids"] or [])
                messages_ = dict(
                    conn.execute(
                        select(claims.c.claim_id, claims.c.message_id).where(claims.c.claim_id.in_(ids))
                    ).all()
                )
                return [(m, None) for m in dict.fromkeys(messages_[i] for i in ids if i in messages_)]
            if relation == "FactState>HISTORY":
                query = select(f.fact_state_id).where(
                    believed, f.subject == row["subject"], f.attribute == row["attribute"]
                )
                return [
                    (i, None) for i in conn.execute(query.order_by(f.valid_from, f.fact_state_id)).scalars()
                ]
            if relation == "FactState>SUPERSEDED_BY":
                query = select(f.fact_state_id).where(believed, f.state_key == row["superseded_by"])
            else:  # SUPERSEDES
                query = select(f.fact_state_id).where(believed, f.superseded_by == row["state_key"])
            return [(i, None) for i in conn.execute(query).scalars() if i]

    def _next(self, message_id: str, forward: bool) -> list[tuple[str, float | None]]:
        table = self.reader.messages()
        i = table.index.get(message_id)
        j = (i + 1 if forward else i - 1) if i is not None else None
        if j is None or not 0 <= j < len(table) or table.conversation[j] != table.conversation[i]:
            return []
        return [(table.ids[j], None)]


_SOURCE_RELATIONS = {"Message>Conversation", "Conversation>Message"}
_QUERIES = {
    "Domain>AnchorEntity": lambda i: (
        select(anchor_entities.c.anchor_id, anchor_entities.c.score)
        .where(anchor_entities.c.domain_id == i)
        .order_by(anchor_entities.c.score.desc())
    ),
    "Domain>Topic": lambda i: (
        select(topics.c.topic_id, topics.c.size).where(topics.c.domain_id == i).order_by(topics.c.size.desc())
    ),
    "AnchorEntity>Topic": lambda i: (
        select(topics.c.topic_id, topics.c.size).where(topics.c.anchor_id == i).order_by(topics.c.size.desc())
    ),
    "AnchorEntity>Concept": lambda i: select(anchor_entities.c.concept_id).where(
        anchor_entities.c.anchor_id == i
    ),
    "AnchorEntity>Domain": lambda i: select(anchor_entities.c.domain_id).where(
        anchor_entities.c.anchor_id == i
    ),
    "Topic>Concept": lambda i: (
        select(topic_concept_links.c.concept_id, topic_concept_links.c.weight)
        .where(topic_concept_links.c.topic_id == i)
        .order_by(topic_concept_links.c.weight.desc())
    ),
    "Topic>Segment": lambda i: (
        select(topic_segments.c.segment_id, topic_segments.c.probability)
        .where(topic_segments.c.topic_id == i)
        .order_by(topic_segments.c.probability.desc())
    ),
    "Topic>Domain": lambda i: select(topics.c.domain_id).where(topics.c.topic_id == i),
    "Concept>Message": lambda i: (
        select(concept_evidence.c.message_id, concept_evidence.c.confidence)
        .where(concept_evidence.c.concept_id == i, concept_evidence.c.status == "active")
        .order_by(concept_evidence.c.confidence.desc())
    ),
    "Concept>Topic": lambda i: (
        select(topic_concept_links.c.topic_id, topic_concept_links.c.weight)
        .where(topic_concept_links.c.concept_id == i)
        .order_by(topic_concept_links.c.weight.desc())
    ),
    "Concept>Segment": lambda i: select(concept_evidence.c.segment_id).where(
        concept_evidence.c.concept_id == i
    ),
    "Segment>Topic": lambda i: select(topic_segments.c.topic_id, topic_segments.c.probability).where(
        topic_segments.c.segment_id == i
    ),
    "Segment>Concept": lambda i: select(mentions.c.consolidated_id, mentions.c.confidence).where(
        mentions.c.segment_id == i
    ),
    "Message>Concept": lambda i: select(concept_evidence.c.concept_id, concept_evidence.c.confidence).where(
        concept_evidence.c.message_id == i
    ),
    "Message>Conversation": lambda i: select(messages.c.conversation_id).where(messages.c.message_id == i),
    "Conversation>Message": lambda i: (
        select(messages.c.message_id).where(messages.c.conversation_id == i).order_by(messages.c.position)
    ),
    "Concept>FactState": lambda i: (
        select(fact_states.c.fact_state_id)
        .where(fact_states.c.concept_id == i, fact_states.c.superseded_at.is_(None))
        .order_by(fact_states.c.valid_from)
    ),
    "FactState>Concept": lambda i: select(fact_states.c.concept_id).where(fact_states.c.fact_state_id == i),
}

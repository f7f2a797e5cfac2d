"""The small subgraph a Phase 1 decision is made on: a proposal's concepts, the mentions (evidence) each
absorbed, the topics linked to them, the people speaking, and, on request, the source segments.

`read_source_segments` is the one way to read raw text; every segment read is recorded so the audit row of
the resulting action says what the chooser looked at.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy import select

from memory_core.gardener.common import mention_info, named_participants
from memory_core.gardener.refactor.state import Workspace
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.store.schema import segments, topic_concept_links, topics

MAX_SEGMENTS_READ = 24


@dataclass
class Neighbourhood:
    ws: Workspace
    proposal: dict
    concepts: dict[str, ConceptHypothesis]  # as the run's workspace sees them (unknown ids are dropped)
    mentions: dict[str, list[dict]]  # concept -> linked mentions (mention_info rows), by time
    topics: dict[str, list[str]]  # concept -> labels of linked topics
    people: dict[str, frozenset[str]]  # conversation -> named people
    segments_read: dict[str, str] = field(default_factory=dict)

    @property
    def store(self):
        return self.ws.store

    def people_of(self, cid: str) -> frozenset[str]:
        out: set[str] = set()
        for m in self.mentions.get(cid, []):
            out |= self.people.get(m["conversation_id"], frozenset())
        return frozenset(out)

    def evidence_messages(self, cid: str, limit: int | None = None) -> list[str]:
        ids = list(dict.fromkeys(m["message_id"] for m in self.mentions.get(cid, [])))
        return ids[:limit] if limit else ids

    def segment_ids(self, cid: str) -> list[str]:
        return list(dict.fromkeys(m["segment_id"] for m in self.mentions.get(cid, [])))

    def read_source_segments(self, segment_ids: list[str]) -> dict[str, str]:
        """The texts of segments of this neighbourhood (others are ignored), at most MAX_SEGMENTS_READ per
        neighbourhood; recorded in `segments_read`."""
        allowed = {m["segment_id"] for ms in self.mentions.values() for m in ms}
        wanted = [s for s in dict.fromkeys(segment_ids) if s in allowed and s not in self.segments_read]
        wanted = wanted[: max(0, MAX_SEGMENTS_READ - len(self.segments_read))]
        if wanted:
            with self.store.staging.connect() as conn:
                self.segments_read.update(
                    conn.execute(
                        select(segments.c.segment_id, segments.c.text).where(
                            segments.c.segment_id.in_(wanted)
                        )
                    ).all()
                )
        return {s: self.segments_read[s] for s in segment_ids if s in self.segments_read}


def load_neighbourhood(ws: Workspace, proposal: dict, extra_concepts: list[str] = ()) -> Neighbourhood:
    ids = list(dict.fromkeys([*proposal["concept_ids"], *extra_concepts]))
    concepts = {c: row for c in ids if (row := ws.concept(c)) is not None}
    linked = {c: ws.linked_mentions(c) for c in concepts}
    info = mention_info(ws.store, sorted({m for ms in linked.values() for m in ms}))
    by_concept = {
        c: sorted(
            (info[m] for m in ms if m in info), key=lambda r: (r["message_created_at"], r["mention_id"])
        )
        for c, ms in linked.items()
    }
    conversations = sorted({m["conversation_id"] for ms in by_concept.values() for m in ms})
    labels: dict[str, list[str]] = defaultdict(list)
    with ws.store.staging.connect() as conn:
        for concept_id, label in conn.execute(
            select(topic_concept_links.c.concept_id, topics.c.label)
            .join(topics, topics.c.topic_id == topic_concept_links.c.topic_id)
            .where(topic_concept_links.c.concept_id.in_(list(concepts)))
            .order_by(topic_concept_links.c.weight.desc())
        ):
            labels[concept_id].append(label)
    return Neighbourhood(
        ws=ws,
        proposal=proposal,
        concepts=concepts,
        mentions=by_concept,
        topics=dict(labels),
        people=named_participants(ws.store, conversations),
    )

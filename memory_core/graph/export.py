"""Source, staging and reflective tables → graph node and edge batches (docs/architecture.md §4.8).

Edges are pre-linked by ids through SQL joins inside a store (a mention's `consolidated_id`, a link's
`topic_id`/`concept_id`, ...), never by matching names. Across stores (a staging row citing a source
message, a reaction's topic) the ids are checked against the id sets gathered while streaming the nodes;
an edge whose endpoint does not exist is not emitted and is counted in `ExportReport.dangling` per type.

Everything streams in batches; message texts are read once (the nodes pass), the edges pass reads ids
only. Reflective nodes (UserReaction, DURING) are excluded unless asked for, and can be exported on their
own (`GraphExport(store, core=False, reflective=True)`) to be upserted into an existing graph.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field

from sqlalchemy import Engine, and_, func, or_, select

from memory_core.graph.base import EdgeBatch, NodeBatch
from memory_core.graph.schema import CONCEPT_RELATION_TYPES, NODE_TYPES
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

SEGMENT_PREVIEW_CHARS = 200
DEFAULT_BATCH = 5000
# what a core export reads, and nothing else (the clock only decides reflective rows): while none of these
# changed, the export is the same (tests/test_stage_memo.py checks the list against the SQL it runs)
CORE_TABLES = (
    ("source", "conversations"),
    ("source", "messages"),
    *(
        ("staging", t.name)
        for t in (
            anchor_entities,
            canonical_concepts,
            concept_evidence,
            domains,
            fact_states,
            gardener_actions,
            mentions,
            segments,
            topic_concept_links,
            topic_segments,
            topics,
        )
    ),
)


@dataclass
class ExportReport:
    nodes: Counter = field(default_factory=Counter)
    edges: Counter = field(default_factory=Counter)
    dangling: Counter = field(default_factory=Counter)  # edge type -> rows citing an id that does not exist
    expired_reactions: int = 0  # past their retention (`expires_at`), not exported


def _stream(engine: Engine, stmt, size: int) -> Iterator[list]:
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True, yield_per=size).execute(stmt)
        yield from result.partitions(size)


def current_segments():
    return segments.c.superseded_at.is_(None)


def reaction_alive(now):
    return or_(user_reactions.c.expires_at.is_(None), user_reactions.c.expires_at > now)


class GraphExport:
    """One export of a corpus. Iterate `nodes()` fully, then `edges()` (the graph stores do)."""

    def __init__(
        self, store: CorpusStore, core: bool = True, reflective: bool = False, batch_size: int = DEFAULT_BATCH
    ):
        if not core and not reflective:
            raise ValueError("export nothing? set core and/or reflective")
        self.store = store
        self.core = core
        self.reflective = reflective
        self.batch_size = batch_size
        self.report = ExportReport()
        self.now = utcnow()
        self._message_ids: set[str] | None = None
        self._concept_ids: set[str] | None = None
        self._topic_ids: set[str] | None = None

    # helpers ----------------------------------------------------------------------------------------
    def _edges(self, type_: str, src: str, dst: str, rows: list[dict]) -> Iterator[EdgeBatch]:
        for i in range(0, len(rows), self.batch_size):
            part = rows[i : i + self.batch_size]
            self.report.edges[type_] += len(part)
            yield EdgeBatch(type_, src, dst, part)

    def _ids(self, engine: Engine, column) -> set[str]:
        with engine.connect() as conn:
            return set(conn.execute(select(column)).scalars())

    @property
    def message_ids(self) -> set[str]:
        if self._message_ids is None:
            self._message_ids = self._ids(self.store.source, messages.c.message_id)
        return self._message_ids

    @property
    def concept_ids(self) -> set[str]:
        if self._concept_ids is None:
            self._concept_ids = self._ids(self.store.staging, canonical_concepts.c.concept_id)
        return self._concept_ids

    @property
    def topic_ids(self) -> set[str]:
        if self._topic_ids is None:
            self._topic_ids = self._ids(self.store.staging, topics.c.topic_id)
        return self._topic_ids

    # nodes ------------------------------------------------------------------------------------------
    def nodes(self) -> Iterator[NodeBatch]:
        if self.core:
            src, stg = self.store.source, self.store.staging
            s = segments.c
            yield from self._nodes("Conversation", src, conversations, "conversation_id")
            self._message_ids = set()
            yield from self._nodes("Message", src, messages, "message_id", seen=self._message_ids)
            yield from self._nodes(
                "Segment",
                stg,
                segments,
                "segment_id",
                current_segments(),
                # a preview only: the text lives in the source messages (read once, by the Message pass)
                preview=func.substr(s.text, 1, SEGMENT_PREVIEW_CHARS),
                message_count=func.json_array_length(s.message_ids),
            )
            self._concept_ids = set()
            yield from self._nodes("Concept", stg, canonical_concepts, "concept_id", seen=self._concept_ids)
            self._topic_ids = set()
            yield from self._nodes("Topic", stg, topics, "topic_id", seen=self._topic_ids)
            yield from self._nodes("AnchorEntity", stg, anchor_entities, "anchor_id")
            yield from self._nodes("Domain", stg, domains, "domain_id")
            yield from self._nodes("FactState", stg, fact_states, "fact_state_id")
            yield from self._nodes("GardenerAction", stg, gardener_actions, "gardener_action_id")
        if self.reflective:
            with self.store.reflective.connect() as conn:
                self.report.expired_reactions = conn.execute(
                    select(func.count()).select_from(user_reactions).where(~reaction_alive(self.now))
                ).scalar_one()
            yield from self._nodes(
                "UserReaction", self.store.reflective, user_reactions, "reaction_id", reaction_alive(self.now)
            )

    def _nodes(
        self,
        label: str,
        engine: Engine,
        table,
        id_column: str,
        where=None,
        seen: set[str] | None = None,
        **exprs,
    ) -> Iterator[NodeBatch]:
        """Rows of `table` as `label` nodes: the id column as `id`, each graph property from the column of
        the same name (or the SQL expression given for it), streamed in batches."""
        columns = [table.c[id_column].label("id")]
        columns += [
            (exprs[p.name] if p.name in exprs else table.c[p.name]).label(p.name)
            for p in NODE_TYPES[label].props
        ]
        stmt = select(*columns) if where is None else select(*columns).where(where)
        for part in _stream(engine, stmt.order_by(table.c[id_column]), self.batch_size):
            rows = [dict(r._mapping) for r in part]
            if seen is not None:
                seen.update(r["id"] for r in rows)
            self.report.nodes[label] += len(rows)
            yield NodeBatch(label, rows)

    # edges ------------------------------------------------------------------------------------------
    def edges(self) -> Iterator[EdgeBatch]:
        if self.core:
            yield from self._chronology()
            yield from self._segment_edges()
            yield from self._concept_edges()
            yield from self._hierarchy_edges()
        if self.reflective:
            yield from self._during()

    def _chronology(self) -> Iterator[EdgeBatch]:
        """HAS_MESSAGE, NEXT and PREVIOUS from one ordered pass over message ids (no texts)."""
        m = messages.c
        stmt = select(m.message_id, m.conversation_id, m.position).order_by(
            m.conversation_id, m.position, m.message_id
        )
        previous: tuple[str, str] | None = None  # (conversation_id, message_id) of the last row seen
        for part in _stream(self.store.source, stmt, self.batch_size):
            has, nxt, prv = [], [], []
            for r in part:
                has.append({"src": r.conversation_id, "dst": r.message_id, "position": r.position})
                if previous is not None and previous[0] == r.conversation_id:
                    nxt.append({"src": previous[1], "dst": r.message_id})
                    prv.append({"src": r.message_id, "dst": previous[1]})
                previous = (r.conversation_id, r.message_id)
            yield from self._edges("HAS_MESSAGE", "Conversation", "Message", has)
            yield from self._edges("NEXT", "Message", "Message", nxt)
            yield from self._edges("PREVIOUS", "Message", "Message", prv)

    def _segment_edges(self) -> Iterator[EdgeBatch]:
        s = segments.c
        known = self.message_ids
        stmt = select(s.segment_id, s.message_ids, s.message_spans).where(current_segments())
        for part in _stream(self.store.staging, stmt, self.batch_size):
            rows = []
            for r in part:
                spans = {}
                for span in r.message_spans or []:
                    lo, hi = spans.get(span["message_id"], (span["start"], span["end"]))
                    spans[span["message_id"]] = (min(lo, span["start"]), max(hi, span["end"]))
                for ordinal, message_id in enumerate(dict.fromkeys(r.message_ids)):
                    if message_id not in known:
                        self.report.dangling["CONTAINS_MESSAGE"] += 1
                        continue
                    start, end = spans.get(message_id, (0, 0))
                    rows.append(
                        {
                            "src": r.segment_id,
                            "dst": message_id,
                            "ordinal": ordinal,
                            "start": start,
                            "end": end,
                        }
                    )
            yield from self._edges("CONTAINS_MESSAGE", "Segment", "Message", rows)

    def _concept_edges(self) -> Iterator[EdgeBatch]:
        stg = self.store.staging
        mn, s, cc = mentions.c, segments.c, canonical_concepts.c
        mentions_stmt = (
            select(
                mn.segment_id,
                mn.consolidated_id,
                func.count().label("n"),
                func.max(mn.confidence).label("confidence"),
            )
            .join(segments, and_(s.segment_id == mn.segment_id, current_segments()))
            .join(canonical_concepts, cc.concept_id == mn.consolidated_id)
            .group_by(mn.segment_id, mn.consolidated_id)
            .order_by(mn.segment_id, mn.consolidated_id)
        )
        for part in _stream(stg, mentions_stmt, self.batch_size):
            rows = [
                {"src": r.segment_id, "dst": r.consolidated_id, "mentions": r.n, "confidence": r.confidence}
                for r in part
            ]
            yield from self._edges("MENTIONS", "Segment", "Concept", rows)

        ce = concept_evidence.c
        known = self.message_ids
        evidence_stmt = (
            select(
                ce.concept_id,
                ce.mention_id,
                ce.message_id,
                ce.segment_id,
                ce.span_start,
                ce.span_end,
                ce.text,
                ce.confidence,
                ce.status,
            )
            .join(canonical_concepts, cc.concept_id == ce.concept_id)
            .order_by(ce.concept_id, ce.mention_id)
        )
        for part in _stream(stg, evidence_stmt, self.batch_size):
            rows = []
            for r in part:
                if r.message_id not in known:
                    self.report.dangling["EVIDENCE_FOR"] += 1
                    continue
                rows.append(
                    {
                        "src": r.message_id,
                        "dst": r.concept_id,
                        "mention_id": r.mention_id,
                        "segment_id": r.segment_id,
                        "span_start": r.span_start,
                        "span_end": r.span_end,
                        "text": r.text,
                        "confidence": r.confidence,
                        "status": r.status,
                    }
                )
            yield from self._edges("EVIDENCE_FOR", "Message", "Concept", rows)

        t, ln = topics.c, topic_concept_links.c
        links_stmt = (
            select(ln.topic_id, ln.concept_id, ln.weight, ln.cosine)
            .join(topics, t.topic_id == ln.topic_id)
            .join(canonical_concepts, cc.concept_id == ln.concept_id)
            .order_by(ln.topic_id, ln.concept_id)
        )
        for part in _stream(stg, links_stmt, self.batch_size):
            rows = [
                {"src": r.topic_id, "dst": r.concept_id, "weight": r.weight, "cosine": r.cosine} for r in part
            ]
            yield from self._edges("RELATED_TO", "Topic", "Concept", rows)

        # typed relations: ids inside the concept's JSON, checked against the concept ids
        known_concepts = self.concept_ids
        for part in _stream(
            stg, select(cc.concept_id, cc.relations).order_by(cc.concept_id), self.batch_size
        ):
            by_type: dict[str, dict[tuple[str, str], dict]] = {t: {} for t in CONCEPT_RELATION_TYPES.values()}
            for r in part:
                for rel in r.relations or []:
                    type_ = CONCEPT_RELATION_TYPES.get(rel.get("relation"))
                    target = rel.get("target_id")
                    if type_ is None or target not in known_concepts:
                        self.report.dangling[type_ or "unknown_relation"] += 1
                        continue
                    if target == r.concept_id:
                        self.report.dangling["self_relation"] += 1
                        continue
                    by_type[type_].setdefault(
                        (r.concept_id, target),
                        {"src": r.concept_id, "dst": target, "confidence": float(rel.get("confidence", 0.0))},
                    )
            for type_, rows in by_type.items():
                yield from self._edges(type_, "Concept", "Concept", list(rows.values()))

        f = fact_states.c
        states_stmt = (
            select(
                f.fact_state_id,
                f.concept_id,
                f.valid_from,
                f.valid_until,
                f.recorded_at,
                f.superseded_at,
                f.status,
            )
            .join(canonical_concepts, cc.concept_id == f.concept_id)
            .order_by(f.concept_id, f.fact_state_id)
        )
        for part in _stream(stg, states_stmt, self.batch_size):
            rows = [
                {
                    "src": r.concept_id,
                    "dst": r.fact_state_id,
                    "valid_from": r.valid_from,
                    "valid_until": r.valid_until,
                    "recorded_at": r.recorded_at,
                    "superseded_at": r.superseded_at,
                    "status": r.status or "",
                }
                for r in part
            ]
            yield from self._edges("HAS_STATE", "Concept", "FactState", rows)

        g = gardener_actions.c
        for part in _stream(
            stg, select(g.gardener_action_id, g.concept_ids).order_by(g.gardener_action_id), self.batch_size
        ):
            rows = []
            for r in part:
                for concept_id in dict.fromkeys(r.concept_ids or []):
                    if concept_id not in known_concepts:
                        self.report.dangling["ACTED_ON"] += 1
                        continue
                    rows.append({"src": r.gardener_action_id, "dst": concept_id})
            yield from self._edges("ACTED_ON", "GardenerAction", "Concept", rows)

    def _hierarchy_edges(self) -> Iterator[EdgeBatch]:
        stg = self.store.staging
        ts, s, t, a, d = topic_segments.c, segments.c, topics.c, anchor_entities.c, domains.c
        seg_topic = (
            select(ts.segment_id, ts.topic_id, ts.probability)
            .join(segments, and_(s.segment_id == ts.segment_id, current_segments()))
            .join(topics, t.topic_id == ts.topic_id)
            .order_by(ts.segment_id)
        )
        for part in _stream(stg, seg_topic, self.batch_size):
            rows = [{"src": r.segment_id, "dst": r.topic_id, "probability": r.probability} for r in part]
            yield from self._edges("BELONGS_TO", "Segment", "Topic", rows)
        topic_anchor = (
            select(t.topic_id, t.anchor_id)
            .join(anchor_entities, a.anchor_id == t.anchor_id)
            .order_by(t.topic_id)
        )
        for part in _stream(stg, topic_anchor, self.batch_size):
            yield from self._edges(
                "BELONGS_TO", "Topic", "AnchorEntity", [{"src": r.topic_id, "dst": r.anchor_id} for r in part]
            )
        anchor_domain = (
            select(a.anchor_id, a.domain_id).join(domains, d.domain_id == a.domain_id).order_by(a.anchor_id)
        )
        for part in _stream(stg, anchor_domain, self.batch_size):
            yield from self._edges(
                "BELONGS_TO",
                "AnchorEntity",
                "Domain",
                [{"src": r.anchor_id, "dst": r.domain_id} for r in part],
            )
        topic_domain = (
            select(t.topic_id, t.domain_id)
            .join(domains, d.domain_id == t.domain_id)
            .outerjoin(anchor_entities, a.anchor_id == t.anchor_id)
            .where(a.anchor_id.is_(None))
            .order_by(t.topic_id)
        )
        for part in _stream(stg, topic_domain, self.batch_size):
            yield from self._edges(
                "BELONGS_TO", "Topic", "Domain", [{"src": r.topic_id, "dst": r.domain_id} for r in part]
            )

    def _during(self) -> Iterator[EdgeBatch]:
        u = user_reactions.c
        known = self.topic_ids
        stmt = (
            select(u.reaction_id, u.topic_id)
            .where(u.topic_id.is_not(None), reaction_alive(self.now))
            .order_by(u.reaction_id)
        )
        for part in _stream(self.store.reflective, stmt, self.batch_size):
            rows = []
            for r in part:
                if r.topic_id not in known:
                    self.report.dangling["DURING"] += 1
                    continue
                rows.append({"src": r.reaction_id, "dst": r.topic_id})
            yield from self._edges("DURING", "UserReaction", "Topic", rows)

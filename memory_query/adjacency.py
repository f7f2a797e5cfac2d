"""The walks of graph synthesis — Topic RELATED_TO Concept, Message EVIDENCE_FOR Concept, NEXT/PREVIOUS —
over adjacency read once from the graph store when a graph was loaded, or from the staging tables it is
loaded from when not (docs/architecture.md §7: graph → vector → raw source). Retrieval walks one structure either way;
reading the edges once per graph version keeps each query's walks in memory (no per-query graph calls).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from memory_core.store.db import file_stamps
from memory_query.read_cache import SortedLookup, decode_part, prefixed
from memory_query.reader import CorpusReader

WALK_LIMIT = 50


@dataclass
class Adjacency:
    """Dicts when read from the graph or the tables; `SortedLookup`s over arrays from the read cache."""

    source: str  # "graph" (read from the graph store) or "tables" (from the staging tables)
    related: Mapping[str, list[tuple[str, float]]] = field(default_factory=dict)  # topic → (concept, weight)
    evidence: Mapping[str, list[tuple[str, float]]] = field(
        default_factory=dict
    )  # concept → (message, confidence)
    next_of: Mapping[str, str] = field(default_factory=dict)
    prev_of: Mapping[str, str] = field(default_factory=dict)

    _GROUPED = ("related", "evidence")
    _SINGLE = ("next_of", "prev_of")

    def to_arrays(self) -> dict:
        """The walks as the read cache saves them (`memory_query.read_cache`)."""
        out: dict = {}
        for name in self._GROUPED:
            out.update(prefixed(name, SortedLookup.encode_grouped(getattr(self, name))))
        for name in self._SINGLE:
            out.update(prefixed(name, SortedLookup.encode(getattr(self, name))))
        return out

    @classmethod
    def from_arrays(cls, source: str, arrays) -> Adjacency:
        return cls(source, **{n: SortedLookup.from_arrays(arrays, n) for n in (*cls._GROUPED, *cls._SINGLE)})

    def related_concepts(self, topic_id: str) -> list[tuple[str, float]]:
        return _first(self.related, topic_id)

    def evidence_messages(self, concept_id: str) -> list[tuple[str, float]]:
        return _first(self.evidence, concept_id)

    def neighbours_in_time(self, message_id: str) -> list[str]:
        return [m for m in (self.prev_of.get(message_id), self.next_of.get(message_id)) if m]


def _first(groups: Mapping[str, list[tuple[str, float]]], key: str) -> list[tuple[str, float]]:
    """A walk's first WALK_LIMIT steps (strongest first)."""
    if isinstance(groups, SortedLookup):
        return groups.first(key, WALK_LIMIT)
    return groups.get(key, [])[:WALK_LIMIT]


def _sorted(groups: dict[str, list[tuple[str, float]]]) -> dict[str, list[tuple[str, float]]]:
    """Strongest first, ties by id: the order edges are read in is the engine's (a graph query runs on
    several threads), and a walk takes only the first WALK_LIMIT steps."""
    return {k: sorted(v, key=lambda x: (-x[1], x[0])) for k, v in groups.items()}


def graph_adjacency(graph) -> Adjacency:
    related: dict[str, list[tuple[str, float]]] = defaultdict(list)
    evidence: dict[str, list[tuple[str, float]]] = defaultdict(list)
    next_of: dict[str, str] = {}
    for _, topic, _, concept, props in graph.iter_edges("RELATED_TO"):
        related[topic].append((concept, float(props.get("weight") or 0.0)))
    for _, message, _, concept, props in graph.iter_edges("EVIDENCE_FOR"):
        if (props.get("status") or "active") != "active":
            continue  # stale / rejected evidence (its source changed) is history, never a walk (as in the tables)
        evidence[concept].append((message, float(props.get("confidence") or 0.0)))
    for _, a, _, b, _props in graph.iter_edges("NEXT"):
        next_of[a] = b
    return Adjacency(
        "graph", _sorted(related), _sorted(evidence), next_of, {b: a for a, b in next_of.items()}
    )


def table_adjacency(reader: CorpusReader) -> Adjacency:
    topics, concepts, table = reader.topics(), reader.concepts(), reader.messages()
    related = {
        tid: [(concepts.ids[ci], w) for ci, w in topics.links[ti]] for ti, tid in enumerate(topics.ids)
    }
    evidence = {
        cid: [(table.ids[mi], conf) for mi, conf, _, _ in concepts.evidence[ci]]
        for ci, cid in enumerate(concepts.ids)
    }
    next_of = {
        table.ids[i]: table.ids[i + 1]
        for i in range(len(table) - 1)
        if table.conversation[i] == table.conversation[i + 1]
    }
    return Adjacency(
        "tables", _sorted(related), _sorted(evidence), next_of, {b: a for a, b in next_of.items()}
    )


def graph_stamp(reader: CorpusReader) -> tuple:
    """The embedded graph file's stamp: what the graph's walks (and their read-cache part) derive from."""
    from memory_core.graph import embedded_graph_path

    return file_stamps([embedded_graph_path(reader.store)])


def cached_graph_adjacency(reader: CorpusReader) -> Adjacency | None:
    """The graph's walks from the read cache when it is as fresh as the graph file, else None."""
    arrays = reader.cached_part("adjacency", graph_stamp(reader))
    if arrays is None:
        return None
    return decode_part("adjacency", arrays, lambda a: Adjacency.from_arrays("graph", a))


def graph_loaded(reader: CorpusReader) -> bool:
    """Whether the walks come from a loaded graph: a fresh read-cache part says so without opening the
    graph store (and becomes the walks, so it is read once)."""
    stamp = graph_stamp(reader)

    def probe() -> bool:
        adjacency = cached_graph_adjacency(reader)
        if adjacency is not None:
            reader.memo("adjacency:graph", stamp, lambda: adjacency)
            return True
        return reader.graph() is not None

    return reader.memo("graph_loaded", stamp, probe)


def adjacency_for(reader: CorpusReader) -> Adjacency:
    stamp = graph_stamp(reader)

    def from_graph() -> Adjacency | None:
        graph = reader.graph()
        return graph_adjacency(graph) if graph is not None else None

    adjacency = reader.memo("adjacency:graph", stamp, lambda: cached_graph_adjacency(reader) or from_graph())
    if adjacency is not None:
        return adjacency
    return reader.memo(
        "adjacency:tables", reader.store_stamp("source", "staging"), lambda: table_adjacency(reader)
    )

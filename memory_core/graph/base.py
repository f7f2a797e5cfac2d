"""The graph store capability: one abstract base, one module per backend (LadybugDB embedded, Neo4j).

Writes are idempotent: `load` replaces a corpus's graph with exactly the nodes and edges given (a rerun of
the same export leaves identical counts) and readers see the previous or the new graph, never half of one;
`upsert` merges a few nodes/edges into the current graph (e.g. reflective nodes loaded on their own).
Reads are the traversal API of the read side: node lookup, neighbours by edge type and direction with edge
properties, a bounded k-hop walk, counts per label/type, the chronological NEXT/PREVIOUS walk, the
Domain → AnchorEntity → Topic → Concept → Segment → Message hierarchy, and HAS_STATE time travel.
"""

from __future__ import annotations

import hashlib
import time
from abc import ABC, abstractmethod
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.graph.schema import (
    EDGE_TYPES,
    HIERARCHY_DOWN,
    HIERARCHY_UP,
    NODE_TYPES,
    Direction,
    EdgeType,
    NodeType,
    check_endpoints,
    clean_props,
    edge_type,
    edge_types_or_all,
    node_type,
)

MAX_HOPS = 6
MAX_LIMIT = 10_000


@dataclass(frozen=True)
class Node:
    label: str
    id: str
    props: dict


@dataclass(frozen=True)
class Neighbour:
    edge_type: str
    direction: str  # "out" (node -> neighbour) or "in" (neighbour -> node)
    edge: dict  # the edge's properties
    node: Node


@dataclass
class NodeBatch:
    label: str
    rows: list[dict]  # {"id": ..., <props>}


@dataclass
class EdgeBatch:
    type: str
    src_label: str
    dst_label: str
    rows: list[dict]  # {"src": ..., "dst": ..., <props>}


@dataclass
class GraphCounts:
    nodes: dict[str, int]
    edges: dict[str, int]

    @property
    def total_nodes(self) -> int:
        return sum(self.nodes.values())

    @property
    def total_edges(self) -> int:
        return sum(self.edges.values())


@dataclass
class LoadReport:
    backend: str
    location: str
    nodes: dict[str, int] = field(default_factory=dict)
    edges: dict[str, int] = field(default_factory=dict)
    #: edges not written because an endpoint was not among the loaded nodes (per edge type)
    dropped_edges: dict[str, int] = field(default_factory=dict)
    #: repeated (type, source, target, key) edges or node ids in one load: the first one is kept
    duplicates: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0
    #: the export equalled the one the store was last loaded from, so nothing was written
    unchanged: bool = False
    #: the digest of the export the store now holds (None: a backend that keeps none, e.g. Neo4j)
    export_digest: str | None = None

    @property
    def items_per_second(self) -> float:
        total = sum(self.nodes.values()) + sum(self.edges.values())
        return total / self.seconds if self.seconds else 0.0


# ------------------------------------------------------------------------------------------ write helpers
def clean_node_rows(batch: NodeBatch) -> tuple[NodeType, list[dict]]:
    nt = node_type(batch.label)
    rows = []
    for row in batch.rows:
        node_id = row.get("id")
        if not isinstance(node_id, str) or not node_id:
            raise ValueError(f"{nt.label} row without a string id: {row!r:.200}")
        props = {k: v for k, v in row.items() if k != "id"}
        rows.append({"id": node_id, **clean_props(props, nt.props, nt.label)})
    return nt, rows


def clean_edge_rows(batch: EdgeBatch) -> tuple[EdgeType, list[dict]]:
    et = check_endpoints(batch.type, batch.src_label, batch.dst_label)
    rows = []
    for row in batch.rows:
        src, dst = row.get("src"), row.get("dst")
        if not isinstance(src, str) or not isinstance(dst, str) or not src or not dst:
            raise ValueError(f"{et.type} row without string src/dst: {row!r:.200}")
        props = {k: v for k, v in row.items() if k not in ("src", "dst")}
        cleaned = clean_props(props, et.props, et.type)
        if et.key and not cleaned.get(et.key):
            raise ValueError(f"{et.type} row without its key property {et.key!r}: {row!r:.200}")
        rows.append({"src": src, "dst": dst, **cleaned})
    return et, rows


class LoadTally:
    """What a full load accepted: node ids per label (so an edge to a node that was not loaded is dropped
    and counted, identically on every backend), duplicate detection, and the counts of the LoadReport."""

    def __init__(self) -> None:
        self.ids: dict[str, set[str]] = defaultdict(set)
        self.nodes: Counter[str] = Counter()
        self.edges: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()
        self.duplicates: Counter[str] = Counter()
        # 8-byte digests of edge identities: a few tens of bytes per edge instead of the strings
        self._edge_keys: set[int] = set()

    def nodes_of(self, batch: NodeBatch) -> tuple[NodeType, list[dict]]:
        nt, rows = clean_node_rows(batch)
        seen = self.ids[nt.label]
        kept = []
        for row in rows:
            if row["id"] in seen:
                self.duplicates[nt.label] += 1
                continue
            seen.add(row["id"])
            kept.append(row)
        self.nodes[nt.label] += len(kept)
        return nt, kept

    def edges_of(self, batch: EdgeBatch) -> tuple[EdgeType, list[dict]]:
        et, rows = clean_edge_rows(batch)
        src_ids, dst_ids = self.ids[batch.src_label], self.ids[batch.dst_label]
        kept = []
        for row in rows:
            if row["src"] not in src_ids or row["dst"] not in dst_ids:
                self.dropped[et.type] += 1
                continue
            identity = "\x1f".join(
                (et.type, row["src"], row["dst"], str(row.get(et.key, "")) if et.key else "")
            )
            digest = int.from_bytes(hashlib.blake2b(identity.encode(), digest_size=8).digest(), "little")
            if digest in self._edge_keys:
                self.duplicates[et.type] += 1
                continue
            self._edge_keys.add(digest)
            kept.append(row)
        self.edges[et.type] += len(kept)
        return et, kept

    def report(
        self,
        backend: str,
        location: str,
        started: float,
        unchanged: bool = False,
        export_digest: str | None = None,
    ) -> LoadReport:
        return LoadReport(
            unchanged=unchanged,
            export_digest=export_digest,
            backend=backend,
            location=location,
            nodes={label: self.nodes.get(label, 0) for label in NODE_TYPES},
            edges={t: self.edges.get(t, 0) for t in EDGE_TYPES},
            dropped_edges={k: v for k, v in self.dropped.items() if v},
            duplicates={k: v for k, v in self.duplicates.items() if v},
            seconds=time.perf_counter() - started,
        )


def chunks(rows: list[dict], size: int) -> Iterator[list[dict]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


# ------------------------------------------------------------------------------------------ read helpers
def check_direction(direction: str) -> Direction:
    if direction not in ("out", "in", "both"):
        raise ValueError(f"direction must be out, in or both, not {direction!r}")
    return direction  # type: ignore[return-value]


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or limit < 1 or limit > MAX_LIMIT:
        raise ValueError(f"limit must be an integer in 1..{MAX_LIMIT}, not {limit!r}")
    return limit


def check_hops(hops: int) -> int:
    if not isinstance(hops, int) or hops < 1 or hops > MAX_HOPS:
        raise ValueError(f"hops must be an integer in 1..{MAX_HOPS}, not {hops!r}")
    return hops


def types_touching(label: str, types: Iterable[str], side: str) -> tuple[str, ...]:
    """The edge types that can leave (`side="src"`) or enter (`"dst"`) a node of `label`."""
    idx = 0 if side == "src" else 1
    return tuple(t for t in types if any(pair[idx] == label for pair in EDGE_TYPES[t].endpoints))


def neighbour_groups(label: str, types: Iterable[str], side: str) -> dict[str, list[str]]:
    """For a node of `label`, the labels at the other end of its `side` ("out"/"in") edges, each with the
    edge types that lead there (from the schema's endpoint pairs), so queries can label both ends."""
    groups: dict[str, list[str]] = {}
    for t in types:
        for src, dst in EDGE_TYPES[t].endpoints:
            near, far = (src, dst) if side == "out" else (dst, src)
            if near == label and t not in groups.setdefault(far, []):
                groups[far].append(t)
    return groups


def check_order_by(order_by: str | None, types: Iterable[str]) -> str | None:
    if order_by is None:
        return None
    for t in types:
        edge_type(t).prop(order_by)  # KeyError names the type without it
    return order_by


def fact_state_where(
    valid_at: datetime | None, recorded_as_of: datetime | None, attribute: str | None, edge: str, node: str
) -> tuple[str, dict]:
    """The HAS_STATE filter, shared by both backends' Cypher. Valid time: `valid_from <= t < valid_until`
    (open `valid_until` = still true), current = `valid_until IS NULL`. System time: what memory believed at
    `recorded_as_of` (`recorded_at <= s < superseded_at`), default = not superseded."""
    clauses, params = [], {}
    if valid_at is None:
        clauses.append(f"{edge}.valid_until IS NULL")
    else:
        clauses.append(
            f"{edge}.valid_from <= $valid_at AND ({edge}.valid_until IS NULL OR $valid_at < {edge}.valid_until)"
        )
        params["valid_at"] = valid_at
    if recorded_as_of is None:
        clauses.append(f"{edge}.superseded_at IS NULL")
    else:
        clauses.append(
            f"{edge}.recorded_at <= $recorded_as_of AND ({edge}.superseded_at IS NULL OR $recorded_as_of < {edge}.superseded_at)"
        )
        params["recorded_as_of"] = recorded_as_of
    if attribute is not None:
        clauses.append(f"{node}.attribute = $attribute")
        params["attribute"] = attribute
    return " AND ".join(clauses), params


def sort_neighbours(items: list[Neighbour], order_by: str | None, limit: int) -> list[Neighbour]:
    if order_by:
        items.sort(key=lambda n: (-(n.edge.get(order_by) or 0), n.edge_type, n.node.label, n.node.id))
    else:
        items.sort(key=lambda n: (n.edge_type, n.direction, n.node.label, n.node.id))
    return items[:limit]


# ------------------------------------------------------------------------------------------ the capability
class GraphStore(ABC):
    """One corpus's graph. Labels and edge types are checked against `memory_core.graph.schema`."""

    backend: str

    # writes -----------------------------------------------------------------------------------------
    @abstractmethod
    def load(self, nodes: Iterable[NodeBatch], edges: Iterable[EdgeBatch]) -> LoadReport:
        """Replace the graph with exactly these nodes and edges (all nodes are consumed before any edge);
        idempotent; readers never see a partial graph (embedded) / stale items are pruned (Neo4j)."""

    def loaded_export(self) -> str | None:
        """The digest of the export (`LoadReport.export_digest`) the store holds now, if it knows it and
        nothing else has written since (None: unknown)."""
        return None

    @abstractmethod
    def upsert(self, nodes: Iterable[NodeBatch] = (), edges: Iterable[EdgeBatch] = ()) -> LoadReport:
        """Merge nodes (by label + id) and edges (by type + endpoints [+ key]) into the current graph.
        Edges whose endpoints are not in the graph are dropped and counted."""

    @abstractmethod
    def delete_label(self, label: str) -> int:
        """Remove every node of a label with its edges (e.g. purge of reflective data); returns how many."""

    # reads ------------------------------------------------------------------------------------------
    @abstractmethod
    def node(self, label: str, node_id: str) -> Node | None: ...

    @abstractmethod
    def neighbours(
        self,
        label: str,
        node_id: str,
        edge_types: list[str] | None = None,
        direction: str = "out",
        neighbour_labels: list[str] | None = None,
        order_by: str | None = None,
        limit: int = 50,
    ) -> list[Neighbour]:
        """Adjacent nodes with the edge's type, direction and properties. `order_by` names an edge
        property to sort by, descending (e.g. RELATED_TO `weight`); else by type, label, id."""

    @abstractmethod
    def walk(
        self,
        label: str,
        node_id: str,
        hops: int,
        edge_types: list[str] | None = None,
        direction: str = "both",
        limit: int = 200,
    ) -> list[tuple[Node, int]]:
        """Nodes within `hops` edges (breadth first: each with its shortest distance), nearest first, then
        by label and id; at most `limit`; the start node excluded."""

    @abstractmethod
    def counts(self) -> GraphCounts:
        """Nodes per label and edges per type (every label/type present, zero when empty)."""

    @abstractmethod
    def iter_edges(self, edge_type: str) -> Iterator[tuple[str, str, str, str, dict]]:
        """Every edge of a type as (source label, source id, target label, target id, properties)."""

    @abstractmethod
    def fact_states(
        self,
        concept_id: str,
        valid_at: datetime | None = None,
        recorded_as_of: datetime | None = None,
        attribute: str | None = None,
    ) -> list[Neighbour]:
        """A concept's FactStates through HAS_STATE: current ones (open `valid_until`) or those valid at
        `valid_at`; as memory believes now, or as it believed at `recorded_as_of`; by `valid_from`."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections."""

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # compositions of the primitives (identical on every backend) --------------------------------------
    def find_node(self, node_id: str, labels: list[str] | None = None) -> Node | None:
        """A node by id alone, trying each label (ids of different labels never collide in practice:
        UUIDs and content hashes)."""
        for label in labels or list(NODE_TYPES):
            found = self.node(label, node_id)
            if found is not None:
                return found
        return None

    def chronology(self, message_id: str, before: int = 2, after: int = 2) -> list[Node]:
        """The message with up to `before` earlier and `after` later messages of its conversation, in order
        (walks PREVIOUS and NEXT)."""
        centre = self.node("Message", message_id)
        if centre is None:
            return []
        earlier = (
            self.walk("Message", message_id, before, ["PREVIOUS"], "out", limit=before) if before else []
        )
        later = self.walk("Message", message_id, after, ["NEXT"], "out", limit=after) if after else []
        return [n for n, _ in sorted(earlier, key=lambda x: -x[1])] + [centre] + [n for n, _ in later]

    def children(self, label: str, node_id: str, limit: int = 50) -> list[Neighbour]:
        """One level down the hierarchy Domain → AnchorEntity → Topic → Concept → Segment → Message
        (topics' concepts by RELATED_TO weight)."""
        step = HIERARCHY_DOWN.get(node_type(label).label)
        if step is None:
            return []
        edge, direction, labels = step
        order = "weight" if edge == "RELATED_TO" else None
        return self.neighbours(label, node_id, [edge], direction, list(labels), order, limit)

    def parents(self, label: str, node_id: str, limit: int = 50) -> list[Neighbour]:
        """One level up the hierarchy (a concept's topics by RELATED_TO weight)."""
        step = HIERARCHY_UP.get(node_type(label).label)
        if step is None:
            return []
        edge, direction, labels = step
        order = "weight" if edge == "RELATED_TO" else None
        return self.neighbours(label, node_id, [edge], direction, list(labels), order, limit)

    def lineage(self, label: str, node_id: str) -> list[Node]:
        """The path from a node up to its Domain, following the first (strongest) parent at each level."""
        path: list[Node] = []
        current = self.node(label, node_id)
        while current is not None and len(path) <= len(HIERARCHY_UP) + 1:
            path.append(current)
            ups = self.parents(current.label, current.id, limit=1)
            current = ups[0].node if ups else None
        return path


__all__ = [
    "EdgeBatch",
    "GraphCounts",
    "GraphStore",
    "LoadReport",
    "LoadTally",
    "Neighbour",
    "Node",
    "NodeBatch",
    "edge_types_or_all",
]

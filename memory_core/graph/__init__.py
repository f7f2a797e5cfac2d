"""The graph capability: ontology whitelist (`schema`), abstract store (`base`), LadybugDB and Neo4j
backends, and the exporter that turns a corpus's tables into node and edge batches."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from memory_core.errors import MemoryOSError
from memory_core.graph.base import EdgeBatch, GraphCounts, GraphStore, LoadReport, Neighbour, Node, NodeBatch
from memory_core.graph.expectations import expected_counts
from memory_core.graph.export import ExportReport, GraphExport
from memory_core.settings import NEO4J_DATABASE, NEO4J_PASSWORD, NEO4J_URI, NEO4J_USER
from memory_core.store.db import CorpusStore

BACKENDS = ("embedded", "neo4j")


class GraphConfigError(MemoryOSError):
    """A graph store cannot be opened as configured (e.g. backend neo4j without a URI)."""


@dataclass(frozen=True)
class GraphSettings:
    """Which graph store holds a corpus's graph. Neo4j fields left unset are read from NEO4J_URI /
    NEO4J_USER / NEO4J_PASSWORD / NEO4J_DATABASE when the store is opened, never at import."""

    backend: str = "embedded"  # embedded (a LadybugDB file per corpus) | neo4j
    neo4j_uri: str | None = None
    neo4j_user: str | None = None
    neo4j_password: str | None = None  # never in metadata, logs or errors
    neo4j_database: str | None = None
    batch_size: int = 5000  # rows per UNWIND batch (neo4j)

    def uri(self) -> str:
        return self.neo4j_uri or NEO4J_URI.get() or ""

    def database(self) -> str:
        return self.neo4j_database or NEO4J_DATABASE.get() or "neo4j"

    def location(self, store: CorpusStore) -> str:
        """Where the corpus's graph lives, for metadata (never the password)."""
        if self.backend == "embedded":
            return str(embedded_graph_path(store))
        from memory_core.graph.neo4j_store import redacted_uri

        return f"{redacted_uri(self.uri())} db={self.database()} corpus={store.name}"


def embedded_graph_path(store: CorpusStore) -> Path:
    """The corpus's embedded graph database file (docs/architecture.md §3: `corpora/<name>/graph/`)."""
    return store.path("graph", "graph.lbdb")


def open_graph(store: CorpusStore, settings: GraphSettings | None = None) -> GraphStore:
    """The graph store of a corpus (for the `graph` asset through its resource, and for the read side)."""
    settings = settings or GraphSettings()
    if settings.backend == "embedded":
        from memory_core.graph.ladybug_store import LadybugGraphStore

        return LadybugGraphStore(embedded_graph_path(store))
    if settings.backend != "neo4j":
        raise GraphConfigError(f"unknown graph backend {settings.backend!r} ({' or '.join(BACKENDS)})")
    from memory_core.graph.neo4j_store import Neo4jGraphStore

    uri = settings.uri()
    if not uri:
        raise GraphConfigError(
            "graph backend 'neo4j' needs a URI: set `neo4j_uri` or the NEO4J_URI environment variable"
        )
    return Neo4jGraphStore(
        uri,
        settings.neo4j_user or NEO4J_USER.get() or "neo4j",
        settings.neo4j_password or NEO4J_PASSWORD.get() or "",
        corpus=store.name,
        database=settings.database(),
        batch_size=settings.batch_size,
    )


def load_corpus_graph(
    store: CorpusStore, graph: GraphStore, reflective: bool = False
) -> tuple[LoadReport, ExportReport]:
    """Replace the corpus's graph with a fresh export of its tables (reflective nodes only if asked)."""
    export = GraphExport(store, core=True, reflective=reflective)
    report = graph.load(export.nodes(), export.edges())
    return report, export.report


__all__ = [
    "EdgeBatch",
    "ExportReport",
    "GraphConfigError",
    "GraphCounts",
    "GraphExport",
    "GraphSettings",
    "GraphStore",
    "LoadReport",
    "Neighbour",
    "Node",
    "NodeBatch",
    "embedded_graph_path",
    "expected_counts",
    "load_corpus_graph",
    "open_graph",
]

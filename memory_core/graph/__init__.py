"""The graph capability: ontology whitelist (`schema`), abstract store (`base`), LadybugDB and Neo4j
backends, and the exporter that turns a corpus's tables into node and edge batches."""

from __future__ import annotations

import os
from pathlib import Path

from memory_core.errors import MemoryOSError
from memory_core.graph.base import EdgeBatch, GraphCounts, GraphStore, LoadReport, Neighbour, Node, NodeBatch
from memory_core.graph.expectations import expected_counts
from memory_core.graph.export import ExportReport, GraphExport
from memory_core.store.db import CorpusStore


class GraphConfigError(MemoryOSError):
    """A graph store cannot be opened as configured (e.g. backend neo4j without a URI)."""


def embedded_graph_path(store: CorpusStore) -> Path:
    """The corpus's embedded graph database file (DESIGN: `corpora/<name>/graph/`)."""
    return store.path("graph", "graph.lbdb")


def open_graph(
    store: CorpusStore,
    backend: str = "embedded",
    neo4j_uri: str | None = None,
    neo4j_user: str | None = None,
    neo4j_password: str | None = None,
    neo4j_database: str = "neo4j",
    batch_size: int = 5000,
) -> GraphStore:
    """The graph store of a corpus (for the read side and the `graph` asset). Neo4j settings not given
    are read from NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD now, at call time."""
    if backend == "embedded":
        from memory_core.graph.ladybug_store import LadybugGraphStore

        return LadybugGraphStore(embedded_graph_path(store))
    if backend != "neo4j":
        raise ValueError(f"unknown graph backend {backend!r} (embedded or neo4j)")
    from memory_core.graph.neo4j_store import Neo4jGraphStore

    uri = neo4j_uri or os.environ.get("NEO4J_URI", "")
    if not uri:
        raise GraphConfigError(
            "graph backend 'neo4j' needs a URI: set `neo4j_uri` or the NEO4J_URI environment variable"
        )
    user = neo4j_user or os.environ.get("NEO4J_USER") or "neo4j"
    password = neo4j_password or os.environ.get("NEO4J_PASSWORD", "")
    return Neo4jGraphStore(
        uri, user, password, corpus=store.name, database=neo4j_database, batch_size=batch_size
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

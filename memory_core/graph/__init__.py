"""The graph capability: ontology whitelist (`schema`), abstract store (`base`), LadybugDB and Neo4j
backends, and the exporter that turns a corpus's tables into node and edge batches."""

from __future__ import annotations

from pathlib import Path

from memory_core.graph.base import EdgeBatch, GraphCounts, GraphStore, LoadReport, Neighbour, Node, NodeBatch
from memory_core.graph.export import ExportReport, GraphExport, expected_counts
from memory_core.store.db import CorpusStore


def embedded_graph_path(store: CorpusStore) -> Path:
    """The corpus's embedded graph database file (DESIGN: `corpora/<name>/graph/`)."""
    return store.path("graph", "graph.lbdb")


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
]

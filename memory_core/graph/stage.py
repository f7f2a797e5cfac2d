"""The `graph` stage: a fresh export of a corpus's tables loaded into its graph store, and the stage
report."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from memory_core.graph import load_corpus_graph
from memory_core.graph.base import GraphCounts, GraphStore, LoadReport
from memory_core.graph.export import ExportReport
from memory_core.reports import Figures
from memory_core.store.db import CorpusStore


@dataclass
class GraphReport:
    reflective: bool
    load: LoadReport
    export: ExportReport
    counts: GraphCounts  # what the store holds after the load
    where: dict[str, str] = field(default_factory=dict)  # backend and location, as the resource names them

    def as_metadata(self) -> Figures:
        counts, load, export = self.counts, self.load, self.export
        return {
            **self.where,
            "include_reflective": self.reflective,
            "nodes_total": counts.total_nodes,
            "edges_total": counts.total_edges,
            "node_counts": counts.nodes,
            "edge_counts": counts.edges,
            "counts": [{"kind": "node", "type": k, "count": v} for k, v in counts.nodes.items()]
            + [{"kind": "edge", "type": k, "count": v} for k, v in counts.edges.items()],
            "dangling_references": dict(export.dangling),
            "dropped_edges": load.dropped_edges,
            "duplicates": load.duplicates,
            "expired_reactions_skipped": export.expired_reactions,
            "unchanged": load.unchanged,
            "load_seconds": round(load.seconds, 3),
            "items_per_second": round(load.items_per_second, 1),
        }

    def summary(self, corpus: str) -> str:
        if self.load.unchanged:
            return (
                f"{corpus}: the export equals the graph's last load ({self.counts.total_nodes} nodes, "
                f"{self.counts.total_edges} edges): nothing written"
            )
        return (
            f"{corpus}: {self.counts.total_nodes} nodes, {self.counts.total_edges} edges loaded in "
            f"{self.load.seconds:.2f}s ({self.load.items_per_second:.0f}/s) into {self.where.get('backend', self.load.backend)}"
        )


def build_graph(
    store: CorpusStore, graph: GraphStore, reflective: bool = False, where: Mapping[str, str] | None = None
) -> GraphReport:
    """Replace the corpus's graph (see `load_corpus_graph`) and count what the store then holds."""
    load, export = load_corpus_graph(store, graph, reflective=reflective)
    return GraphReport(reflective, load, export, graph.counts(), dict(where or {}))

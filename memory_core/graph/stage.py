"""The `graph` stage: a fresh export of a corpus's tables loaded into its graph store, and the stage
report.

An export is computed only when it can differ from the one the store holds: the digest of the last core
export is kept with the write counters of the tables it read (memory_core.store.memo); while they stand and
the store still holds that export (`GraphStore.loaded_export`), the stage reads nothing. A reflective export
depends on the clock too (expired reactions drop out): it is always computed.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import memory_core.graph
from memory_core.graph import load_corpus_graph
from memory_core.graph.base import GraphCounts, GraphStore, LoadReport
from memory_core.graph.export import CORE_TABLES, ExportReport
from memory_core.reports import Figures
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore

_MEMO = "graph_export"


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
    """Replace the corpus's graph (see `load_corpus_graph`) unless it holds this export already, and count
    what the store then holds."""
    code = _export_code(graph)
    key = None if reflective else memo.tables_key(store, CORE_TABLES, code)
    reports = _still_loaded(store, graph, key) if key else None
    if reports is None:
        reports = load_corpus_graph(store, graph, reflective=reflective)
        if key:
            _keep_export(store, key, code, *reports)
    load, exported = reports
    return GraphReport(reflective, load, exported, graph.counts(), dict(where or {}))


def _keep_export(store: CorpusStore, key: str, code: str, load: LoadReport, exported: ExportReport) -> None:
    """Keep what the reports of this core export say, if the store keeps its digest and nothing the export
    read moved while it ran."""
    if load.export_digest and memo.tables_key(store, CORE_TABLES, code) == key:
        kept = {"export_digest": load.export_digest, "location": load.location}
        kept |= {"dangling": dict(exported.dangling), "dropped": load.dropped_edges}
        memo.keep(store, _MEMO, key, {**kept, "duplicates": load.duplicates})


def _export_code(graph: GraphStore) -> str:
    """The export's code and the store's own (how it spools and copies what it loads)."""
    return memo.code_digest([memory_core.graph, store_schema, sys.modules[type(graph).__module__]])


def _still_loaded(store: CorpusStore, graph: GraphStore, key: str) -> tuple[LoadReport, ExportReport] | None:
    """The reports of the kept export when the store still holds it (else None: export again)."""
    started = time.perf_counter()
    kept = memo.kept(store, _MEMO, key)
    if kept is None or graph.loaded_export() != kept["export_digest"]:
        return None
    load = LoadReport(
        graph.backend,
        kept["location"],
        dropped_edges=kept["dropped"],
        duplicates=kept["duplicates"],
        unchanged=True,
        export_digest=kept["export_digest"],
        seconds=time.perf_counter() - started,
    )
    return load, ExportReport(dangling=Counter(kept["dangling"]))

"""Contracts of the read-side stores (memory_core.graph.checks, memory_core.vector_index.checks), evaluated
as asset checks in the step of the asset they check."""

import dagster as dg

from memory_assets.common import Contract
from memory_core.graph import checks as graph_contracts
from memory_core.vector_index import checks as index_contracts

GRAPH = (
    Contract(
        "graph_counts_match_tables",
        "node and edge counts per type equal what the source/staging tables hold (COUNT queries)",
        graph_contracts.graph_counts_match_tables,
        blocking=True,
        inputs=("store", "counts"),  # what the graph store holds after the load, counted by the stage
    ),
    Contract(
        "evidence_points_to_source_messages",
        "every EVIDENCE_FOR edge starts at a stored source message and its span text is that message's text "
        "at the offsets",
        graph_contracts.evidence_points_to_source_messages,
        blocking=True,
        inputs=("store", "graph"),
    ),
)

INDEXES = (
    Contract(
        "index_ids_match_sources",
        "each family's id map holds exactly the ids of its source table, once each, and matches the index size",
        index_contracts.index_ids_match_sources,
        blocking=True,
    ),
    Contract(
        "index_finds_its_own_vectors",
        "a stored vector searched back finds its own id among the top 10 (a sample per family)",
        index_contracts.index_finds_its_own_vectors,
        severity=dg.AssetCheckSeverity.WARN,
    ),
)

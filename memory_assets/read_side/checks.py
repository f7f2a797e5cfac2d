"""Contracts of the read-side stores (memory_core.graph.checks, memory_core.vector_index.checks) as asset
checks."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store
from memory_assets.read_side.assets import graph, indexes, opened_graph
from memory_core.graph import checks as graph_contracts
from memory_core.reports import CheckResult
from memory_core.vector_index import checks as index_contracts
from memory_resources.graph import GraphResource
from memory_resources.storage import MemoryStorage


@corpus_check(
    graph,
    blocking=True,
    description="node and edge counts per type equal what the source/staging tables hold (COUNT queries)",
)
def graph_counts_match_tables(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, graph_store: GraphResource
) -> CheckResult:
    store = corpus_store(context, storage)
    with opened_graph(graph_store, store) as backend:
        counts = backend.counts()
    return graph_contracts.graph_counts_match_tables(store, counts)


@corpus_check(
    graph,
    blocking=True,
    description="every EVIDENCE_FOR edge starts at a stored source message and its span text is that message's "
    "text at the offsets",
)
def evidence_points_to_source_messages(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, graph_store: GraphResource
) -> CheckResult:
    store = corpus_store(context, storage)
    with opened_graph(graph_store, store) as backend:
        return graph_contracts.evidence_points_to_source_messages(store, backend)


@corpus_check(
    indexes,
    blocking=True,
    description="each family's id map holds exactly the ids of its source table, once each, and matches the "
    "index size",
)
def index_ids_match_sources(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return index_contracts.index_ids_match_sources(corpus_store(context, storage))


@corpus_check(
    indexes,
    severity=dg.AssetCheckSeverity.WARN,
    description="a stored vector searched back finds its own id among the top 10 (a sample per family)",
)
def index_finds_its_own_vectors(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CheckResult:
    return index_contracts.index_finds_its_own_vectors(corpus_store(context, storage))

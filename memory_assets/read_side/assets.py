"""Assets `graph` and `indexes`: the stores the read side (query_memory, agent tools, MCP) reads."""

from collections.abc import Iterator
from contextlib import contextmanager

import dagster as dg
from pydantic import Field

from memory_assets.catalog import DERIVED
from memory_assets.common import Table, check_specs, corpus_store, evaluate_contracts, materialize_result
from memory_assets.partitions import corpus_partitions
from memory_assets.read_side import checks
from memory_core.graph import GraphStore
from memory_core.graph.stage import build_graph
from memory_core.progress import progress_to
from memory_core.store.db import CorpusStore
from memory_core.vector_index import FAMILIES
from memory_core.vector_index.stage import MessageVectors, build_indexes
from memory_query.read_cache_writer import write_graph_cache, write_table_cache
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.graph import GraphResource
from memory_resources.storage import MemoryStorage
from memory_resources.vector_index import VectorIndexResource

# the stages whose tables the graph and the indexes load (the catalog hashes the same tables for their data
# versions), and `repairs`, which runs last and may rewrite concepts; a stage not built yet has empty tables
GRAPH_SOURCES = [*DERIVED["graph"], "repairs"]
INDEX_SOURCES = [*DERIVED["indexes"], "repairs"]
# `graph` and `indexes` are siblings a multiprocess run may start together: the second waits for the
# corpus lock instead of failing
LOCK_WAIT_S = 3600.0


@contextmanager
def opened_graph(graph_store: GraphResource, store: CorpusStore) -> Iterator[GraphStore]:
    """The corpus's graph store, closed when done."""
    backend = graph_store.store_for(store)
    try:
        yield backend
    finally:
        backend.close()


class GraphConfig(dg.Config):
    include_reflective: bool = Field(
        default=False,
        description="also load UserReaction nodes and DURING edges (reflective data; off by default)",
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="read_side",
    deps=GRAPH_SOURCES,
    kinds={"ladybug"},
    check_specs=check_specs("graph", checks.GRAPH),
    description="Load every node and edge type of the ontology, pre-linked by SQL joins, into the graph store "
    "(embedded LadybugDB swapped in atomically, or Neo4j); a rerun leaves identical counts. Saves the graph's walks "
    "to the read cache (indexes/read_cache/adjacency.npz, stamped with the graph file).",
)
def graph(
    context: dg.AssetExecutionContext, config: GraphConfig, storage: MemoryStorage, graph_store: GraphResource
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    with store.write_lock(timeout_s=LOCK_WAIT_S), opened_graph(graph_store, store) as backend:
        report = build_graph(
            store, backend, reflective=config.include_reflective, where=graph_store.describe(store)
        )
        evaluated = evaluate_contracts(
            context, "graph", checks.GRAPH, store=store, counts=report.counts, graph=backend
        )
    with store.write_lock(timeout_s=LOCK_WAIT_S):  # after the graph is closed: its file is final
        cached = write_graph_cache(store)
    context.log.info(report.summary(store.name))
    context.log.info(cached.summary())
    return materialize_result(
        report,
        store=store,
        asset_key="graph",
        tables={"counts": Table(limit=60)},
        also=[cached],
        checks=evaluated,
    )


class IndexesConfig(dg.Config):
    families: list[str] = Field(default=list(FAMILIES), description="which index families to build")
    message_vectors: MessageVectors = Field(
        default="mixed",
        description="messages index: `mixed` embeds a message's own text only when it shares its segment with "
        "other messages and derives the rest from the segments index (measured: LoCoMo turn recall_frac@5 "
        "+0.011 over `segments`); `segments` derives every vector (no second embedding pass); `text` embeds "
        "every message's own text",
    )
    embed_batch_size: int = Field(default=256, description="texts per embedder call")


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="read_side",
    deps=INDEX_SOURCES,
    kinds={"faiss"},
    check_specs=check_specs("indexes", checks.INDEXES),
    description="FAISS indexes over topics, concepts, segments and messages with their id maps (exact below a "
    "measured size threshold, HNSW from it on; each swapped in atomically; unchanged items are not re-embedded), "
    "and the BM25 lexical indexes over messages in context, conversations and concepts; then the read cache of the "
    "message table, segment map and lexical indexes as arrays (indexes/read_cache, stamped with what each was "
    "derived from) a cold query loads.",
)
def indexes(
    context: dg.AssetExecutionContext,
    config: IndexesConfig,
    storage: MemoryStorage,
    vector_index: VectorIndexResource,
    embeddings: EmbeddingsResource,
) -> dg.MaterializeResult:
    unknown = sorted(set(config.families) - set(FAMILIES))
    if unknown:
        raise dg.Failure(f"unknown index families {unknown}; choose from {list(FAMILIES)}")
    store = corpus_store(context, storage)
    embedder = embeddings.cached_embedder(storage.memory_home())
    with store.write_lock(timeout_s=LOCK_WAIT_S), progress_to(context.log.info):
        report = build_indexes(
            store,
            embedder,
            vector_index.policy(),
            families=config.families,
            message_vectors=config.message_vectors,
            batch_size=config.embed_batch_size,
            log=context.log.info,
        )
        cached = write_table_cache(store)
    context.log.info(cached.summary())
    return materialize_result(
        report,
        store=store,
        asset_key="indexes",
        tables={"families": Table()},
        also=[cached],
        checks=evaluate_contracts(context, "indexes", checks.INDEXES, store=store),
    )

"""Assets `graph` and `indexes`: the stores the read side (query_memory, agent tools, MCP) reads."""

import time
from typing import Literal

import dagster as dg
from pydantic import Field

from memory_assets.common import corpus_store, md_table
from memory_assets.partitions import corpus_partitions
from memory_core.graph import load_corpus_graph
from memory_core.lexical import build_corpus_lexicon, lexicon_dir
from memory_core.vector_index import FAMILIES, build_family_index
from memory_core.vector_index.families import build_message_index_from_segments
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.graph import GraphResource
from memory_resources.storage import MemoryStorage
from memory_resources.vector_index import VectorIndexResource

# the stages whose tables the graph loads; a stage not built yet simply has empty tables
GRAPH_SOURCES = ["messages", "segments", "canonical_concepts", "topics", "weighted_links", "domains"]
INDEX_SOURCES = ["messages", "segments", "canonical_concepts", "topics"]
# `graph` and `indexes` are siblings a multiprocess run may start together: the second waits for the
# corpus lock instead of failing
LOCK_WAIT_S = 3600.0


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
    description="Load every node and edge type of the ontology, pre-linked by SQL joins, into the graph store "
    "(embedded LadybugDB swapped in atomically, or Neo4j); a rerun leaves identical counts.",
)
def graph(
    context: dg.AssetExecutionContext, config: GraphConfig, storage: MemoryStorage, graph_store: GraphResource
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    with store.write_lock(timeout_s=LOCK_WAIT_S):
        backend = graph_store.store_for(store)
        try:
            load, export = load_corpus_graph(store, backend, reflective=config.include_reflective)
            counts = backend.counts()
        finally:
            backend.close()
    context.log.info(
        f"{store.name}: {counts.total_nodes} nodes, {counts.total_edges} edges loaded in {load.seconds:.2f}s "
        f"({load.items_per_second:.0f}/s) into {graph_store.backend}"
    )
    return dg.MaterializeResult(
        metadata={
            **graph_store.describe(store),
            "include_reflective": config.include_reflective,
            "nodes_total": counts.total_nodes,
            "edges_total": counts.total_edges,
            "node_counts": dg.MetadataValue.json(counts.nodes),
            "edge_counts": dg.MetadataValue.json(counts.edges),
            "counts": md_table(
                [{"kind": "node", "type": k, "count": v} for k, v in counts.nodes.items()]
                + [{"kind": "edge", "type": k, "count": v} for k, v in counts.edges.items()],
                limit=60,
            ),
            "dangling_references": dg.MetadataValue.json(dict(export.dangling)),
            "dropped_edges": dg.MetadataValue.json(load.dropped_edges),
            "duplicates": dg.MetadataValue.json(load.duplicates),
            "expired_reactions_skipped": export.expired_reactions,
            "load_seconds": round(load.seconds, 3),
            "items_per_second": round(load.items_per_second, 1),
        }
    )


class IndexesConfig(dg.Config):
    families: list[str] = Field(default=list(FAMILIES), description="which index families to build")
    message_vectors: Literal["mixed", "segments", "text"] = Field(
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
    description="FAISS indexes over topics, concepts, segments and messages with their id maps (exact below a "
    "measured size threshold, HNSW from it on; each swapped in atomically; unchanged items are not re-embedded), "
    "and the BM25 lexical indexes over messages in context, conversations and concepts.",
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
    policy = vector_index.policy()
    reports = []
    with store.write_lock(timeout_s=LOCK_WAIT_S):
        for family in config.families:
            if family == "messages" and config.message_vectors != "text" and "segments" in config.families:
                report = build_message_index_from_segments(
                    store, embedder, policy, own_text_when_shared=config.message_vectors == "mixed"
                )
            else:
                report = build_family_index(
                    store, family, embedder, policy, batch_size=config.embed_batch_size
                )
            context.log.info(
                f"{store.name}/{family}: {report.kind} index of {report.size} ({report.embedded} embedded, {report.reused} reused)"
            )
            reports.append(report)
        started = time.perf_counter()
        lexicon = build_corpus_lexicon(store)
        lexicon.save(lexicon_dir(store))
        lexical_seconds = time.perf_counter() - started
    return dg.MaterializeResult(
        metadata={
            "embedding_model": embedder.model_name,
            "lexical_messages": lexicon.messages.n_docs,
            "lexical_conversations": lexicon.conversations.n_docs,
            "lexical_concepts": lexicon.concepts.n_docs,
            "lexical_vocabulary": len(lexicon.messages.vocab),
            "lexical_seconds": round(lexical_seconds, 3),
            "approximate_threshold": policy.approximate_threshold,
            **{f"{r.family}_size": r.size for r in reports},
            **{f"{r.family}_kind": r.kind for r in reports},
            "families": md_table([{"family": r.family, **r.as_metadata()} for r in reports]),
            "embedded": sum(r.embedded for r in reports),
            "reused": sum(r.reused for r in reports),
            "embed_seconds": round(sum(r.embed_seconds for r in reports), 3),
            "build_seconds": round(sum(r.build_seconds for r in reports), 3),
            "seconds": round(sum(r.seconds for r in reports), 3),
        }
    )

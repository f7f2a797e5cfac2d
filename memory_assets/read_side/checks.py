"""Contracts of the read-side stores, as partitioned asset checks with explicit severity."""

import dagster as dg
import numpy as np
from sqlalchemy import select

from memory_assets.common import check, corpus_store
from memory_assets.partitions import corpus_partitions
from memory_assets.read_side.assets import graph as graph_asset
from memory_assets.read_side.assets import indexes as indexes_asset
from memory_core.graph import expected_counts
from memory_core.graph.schema import REFLECTIVE_EDGE_TYPES, REFLECTIVE_LABELS
from memory_core.store.schema import messages
from memory_core.vector_index import FAMILIES, open_family_index, source_ids
from memory_resources.graph import GraphResource
from memory_resources.storage import MemoryStorage

_ID_BATCH = 500


@dg.asset_check(
    asset=graph_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="node and edge counts per type equal what the source/staging tables hold (COUNT queries)",
)
def graph_counts_match_tables(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, graph_store: GraphResource
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    backend = graph_store.store_for(store)
    try:
        counts = backend.counts()
    finally:
        backend.close()
    reflective_loaded = counts.nodes["UserReaction"] > 0
    expected = expected_counts(store, reflective=reflective_loaded)
    mismatches = [
        {"kind": kind, "type": name, "graph": have[name], "tables": want}
        for kind, have, wants, skip in (
            ("node", counts.nodes, expected["nodes"], REFLECTIVE_LABELS),
            ("edge", counts.edges, expected["edges"], REFLECTIVE_EDGE_TYPES),
        )
        for name, want in wants.items()
        if have[name] != want and (reflective_loaded or name not in skip)
    ]
    return check(
        not mismatches,
        mismatches=dg.MetadataValue.json(mismatches),
        nodes=counts.total_nodes,
        edges=counts.total_edges,
        reflective_loaded=reflective_loaded,
    )


@dg.asset_check(
    asset=graph_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every EVIDENCE_FOR edge starts at a stored source message and its span text is that message's text at the offsets",
)
def evidence_points_to_source_messages(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, graph_store: GraphResource
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    backend = graph_store.store_for(store)
    missing, wrong_span, total, examples = 0, 0, 0, []

    def verify(batch: list[tuple[str, dict]]) -> None:
        nonlocal missing, wrong_span
        with store.source.connect() as conn:
            texts = dict(
                conn.execute(
                    select(messages.c.message_id, messages.c.text).where(
                        messages.c.message_id.in_({m for m, _ in batch})
                    )
                ).all()
            )
        for message_id, props in batch:
            text = texts.get(message_id)
            if text is None:
                missing += 1
            elif text[props["span_start"] : props["span_end"]] != props["text"]:
                wrong_span += 1
            else:
                continue
            if len(examples) < 10:
                examples.append(
                    {"message_id": message_id, "mention_id": props["mention_id"], "missing": text is None}
                )

    try:
        batch = []
        for _, message_id, _, _, props in backend.iter_edges("EVIDENCE_FOR"):
            total += 1
            batch.append((message_id, props))
            if len(batch) >= _ID_BATCH:
                verify(batch)
                batch = []
        if batch:
            verify(batch)
    finally:
        backend.close()
    return check(
        missing == 0 and wrong_span == 0,
        evidence_edges=total,
        missing_messages=missing,
        wrong_spans=wrong_span,
        examples=dg.MetadataValue.json(examples),
    )


@dg.asset_check(
    asset=indexes_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="each family's id map holds exactly the ids of its source table, once each, and matches the index size",
)
def index_ids_match_sources(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    rows, passed = [], True
    for family in FAMILIES:
        index = open_family_index(store, family)
        want = set(source_ids(store, family))
        if index is None:
            rows.append({"family": family, "index": "missing", "source": len(want)})
            passed = False
            continue
        have = index.ids
        ok = len(have) == len(set(have)) == index.size and set(have) == want
        passed &= ok
        rows.append(
            {
                "family": family,
                "index": index.size,
                "source": len(want),
                "missing_from_index": len(want - set(have)),
                "not_in_source": len(set(have) - want),
                "ok": ok,
            }
        )
    return check(passed, families=dg.MetadataValue.json(rows))


@dg.asset_check(
    asset=indexes_asset,
    partitions_def=corpus_partitions,
    description="a stored vector searched back finds its own id among the top 10 (a sample per family)",
)
def index_finds_its_own_vectors(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    rows, passed = [], True
    for family in FAMILIES:
        index = open_family_index(store, family)
        if index is None or index.size == 0:
            continue
        positions = np.random.default_rng(0).choice(index.size, size=min(20, index.size), replace=False)
        found = index.search(index.vectors(positions), 10).ids
        hits = sum(index.ids[p] in row for p, row in zip(positions, found, strict=True))
        passed &= hits == len(positions)
        rows.append({"family": family, "kind": index.kind, "sampled": len(positions), "found_self": hits})
    return check(passed, dg.AssetCheckSeverity.WARN, families=dg.MetadataValue.json(rows))

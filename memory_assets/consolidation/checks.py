"""Contracts of the consolidation stage, as partitioned asset checks with explicit severity."""

import dagster as dg
from sqlalchemy import func, select

from memory_assets.common import check, corpus_store
from memory_assets.consolidation.assets import canonical_concepts as concepts_asset
from memory_assets.partitions import corpus_partitions
from memory_core.memory_loop import action_log, metrics
from memory_core.store import schema
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage

PURITY_THRESHOLD = 0.70


@dg.asset_check(
    asset=concepts_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="evidence grounding 100%: every evidence span of every live concept equals its message text",
)
def evidence_grounding(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> dg.AssetCheckResult:
    g = metrics.grounding(corpus_store(context, storage))
    return check(
        g["ungrounded_concepts"] == 0,
        dg.AssetCheckSeverity.ERROR,
        grounding=g["grounding"],
        concepts=g["concepts"],
        evidence_spans=g["evidence_spans"],
        ungrounded_concepts=g["ungrounded_concepts"],
        bad_spans=dg.MetadataValue.json(g["bad_spans"]),
    )


@dg.asset_check(
    asset=concepts_asset,
    partitions_def=corpus_partitions,
    description=f"concept purity > {PURITY_THRESHOLD}: mean pairwise cosine of the candidates each concept absorbed",
)
def concept_purity(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, embeddings: EmbeddingsResource
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    p = metrics.purity(store, embeddings.cached_embedder(storage.memory_home()), PURITY_THRESHOLD)
    worst = sorted(p["purity_by_concept"].items(), key=lambda kv: kv[1])[:10]
    return check(
        p["purity"] > PURITY_THRESHOLD,
        dg.AssetCheckSeverity.WARN,  # a quality target: it flags drift, it does not stop downstream stages
        purity=p["purity"],
        purity_min=p["purity_min"],
        concepts_scored=p["concepts_scored"],
        impure_concepts=p["impure_concepts"],
        least_pure=dg.MetadataValue.json({cid: round(v, 4) for cid, v in worst}),
    )


@dg.asset_check(
    asset=concepts_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every mention is linked to a live concept or recorded as a residual; no link dangles",
)
def mentions_accounted(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    m, c = schema.mentions, schema.canonical_concepts
    with store.staging.connect() as conn:
        dangling = conn.execute(
            select(func.count())
            .select_from(m.outerjoin(c, c.c.concept_id == m.c.consolidated_id))
            .where(m.c.consolidated_id.is_not(None), c.c.concept_id.is_(None))
        ).scalar_one()
    totals = metrics.totals(store)
    return check(
        totals["mentions_pending"] == 0 and dangling == 0,
        dg.AssetCheckSeverity.ERROR,
        mentions=totals["mentions"],
        linked=totals["mentions_linked"],
        rejected=totals["mentions_rejected"],
        pending=totals["mentions_pending"],
        dangling_links=dangling,
    )


@dg.asset_check(
    asset=concepts_asset,
    partitions_def=corpus_partitions,
    description="replaying the action_log over an empty store reproduces canonical_concepts and "
    "concept_evidence exactly (memory-loop and gardener actions alike)",
)
def action_log_replays(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    with store.staging.connect() as conn:
        diff = action_log.replay_differences(conn)
    return check(
        not diff["differing"] and diff["evidence_equal"],
        dg.AssetCheckSeverity.ERROR,
        concepts=diff["concepts"],
        replayed=diff["replayed"],
        differing=len(diff["differing"]),
        evidence_rows=diff["evidence_rows"],
        evidence_equal=diff["evidence_equal"],
        examples=dg.MetadataValue.json(diff["differing"][:10]),
    )

"""Contracts and quality targets of the gardener, as partitioned asset checks with explicit severity."""

import dagster as dg
from sqlalchemy import select

from memory_assets.common import check, corpus_store
from memory_assets.gardener.assets import gardener_actions as actions_asset
from memory_assets.gardener.assets import gardener_triage as triage_asset
from memory_assets.partitions import corpus_partitions
from memory_core.gardener import metrics
from memory_core.memory_loop import action_log
from memory_core.memory_loop.metrics import purity
from memory_core.store.schema import canonical_concepts, lifecycle_proposals, messages
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage

ANCHORED_TARGET = 0.60
PURITY_TARGET = 0.70


def _latest_metadata(context: dg.AssetCheckExecutionContext, key: dg.AssetKey) -> dict:
    """Metadata of the asset's latest materialisation of this partition (the run's own, when it just ran)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=key, asset_partitions=[context.partition_key]), limit=1
    ).records
    if not records:
        return {}
    return {k: v.value for k, v in records[0].asset_materialization.metadata.items()}


@dg.asset_check(
    asset=triage_asset,
    partitions_def=corpus_partitions,
    description="triage never mutates concepts: canonical_concepts + concept_evidence hash equal before/after",
)
def triage_left_concepts_unchanged(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    meta = _latest_metadata(context, triage_asset.key)
    return check(
        bool(meta) and meta.get("content_hash_before") == meta.get("content_hash_after"),
        dg.AssetCheckSeverity.ERROR,
        content_hash_before=str(meta.get("content_hash_before", "")),
        content_hash_after=str(meta.get("content_hash_after", "")),
    )


@dg.asset_check(
    asset=triage_asset,
    partitions_def=corpus_partitions,
    description="every pending proposal has a score in [0, 1], a rationale, existing concepts and cites at "
    "least one source message that exists",
)
def proposals_cite_sources(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    store = corpus_store(context, storage)
    lp = lifecycle_proposals.c
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(lp.proposal_id, lp.concept_ids, lp.score, lp.rationale, lp.cited_message_ids).where(
                lp.status == "pending_review"
            )
        ).all()
        concepts = set(conn.execute(select(canonical_concepts.c.concept_id)).scalars())
    cited = sorted({m for r in rows for m in r.cited_message_ids or []})
    known: set[str] = set()
    with store.source.connect() as conn:
        for i in range(0, len(cited), 500):
            known |= set(
                conn.execute(
                    select(messages.c.message_id).where(messages.c.message_id.in_(cited[i : i + 500]))
                ).scalars()
            )
    bad = [
        r.proposal_id
        for r in rows
        if not r.cited_message_ids
        or not set(r.cited_message_ids) <= known
        or not 0.0 <= r.score <= 1.0
        or not r.rationale.strip()
        or not set(r.concept_ids) <= concepts
    ]
    return check(
        not bad,
        dg.AssetCheckSeverity.ERROR,
        pending=len(rows),
        invalid=len(bad),
        examples=dg.MetadataValue.json(bad[:10]),
    )


@dg.asset_check(
    asset=actions_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="100% traceability: every applied merge/split cites source message ids that exist",
)
def merge_split_traceability(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    t = metrics.traceability(corpus_store(context, storage))
    return check(
        t["traceability"] == 1.0,
        dg.AssetCheckSeverity.ERROR,
        merge_split_actions=t["merge_split_actions"],
        traceability=t["traceability"],
        untraced_actions=dg.MetadataValue.json(t["untraced_actions"]),
    )


@dg.asset_check(
    asset=actions_asset,
    partitions_def=corpus_partitions,
    description="replaying the action_log (memory loop + gardener) reproduces canonical_concepts and "
    "concept_evidence exactly",
)
def gardened_log_replays(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    with corpus_store(context, storage).staging.connect() as conn:
        diff = action_log.replay_differences(conn)
    return check(
        not diff["differing"] and diff["evidence_equal"],
        dg.AssetCheckSeverity.ERROR,
        concepts=diff["concepts"],
        differing=len(diff["differing"]),
        evidence_equal=diff["evidence_equal"],
        examples=dg.MetadataValue.json(diff["differing"][:10]),
    )


@dg.asset_check(
    asset=actions_asset,
    partitions_def=corpus_partitions,
    description="the latest Phase 1 run had no execution errors (refused actions, failed LLM decisions)",
)
def no_execution_errors(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    meta = _latest_metadata(context, actions_asset.key)
    errors = int(meta.get("execution_errors", 0) or 0)
    return check(
        errors == 0,
        dg.AssetCheckSeverity.WARN,
        execution_errors=errors,
        dry_run=bool(meta.get("dry_run", True)),
    )


@dg.asset_check(
    asset=actions_asset,
    partitions_def=corpus_partitions,
    description=f"anchored rate > {ANCHORED_TARGET}: share of segments linked to refined concepts "
    "(support ≥ 2 or revised)",
)
def anchored_rate_target(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    a = metrics.anchored_rate(corpus_store(context, storage))
    return check(
        a["anchored_rate"] > ANCHORED_TARGET,
        dg.AssetCheckSeverity.WARN,  # a quality target: it flags, it does not stop anything
        anchored_rate=a["anchored_rate"],
        anchored_segments=a["anchored_segments"],
        segments=a["segments"],
        refined_concepts=a["refined_concepts"],
    )


@dg.asset_check(
    asset=actions_asset,
    partitions_def=corpus_partitions,
    description=f"concept purity > {PURITY_TARGET} after gardening",
)
def concept_purity_target(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage, embeddings: EmbeddingsResource
) -> dg.AssetCheckResult:
    p = purity(
        corpus_store(context, storage), embeddings.cached_embedder(storage.memory_home()), PURITY_TARGET
    )
    return check(
        p["purity"] > PURITY_TARGET,
        dg.AssetCheckSeverity.WARN,
        purity=p["purity"],
        impure_concepts=p["impure_concepts"],
        concepts_scored=p["concepts_scored"],
    )

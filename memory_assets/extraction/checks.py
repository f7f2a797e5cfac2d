"""Contracts of the extraction stage (the seed's bars), as partitioned asset checks with explicit severity."""

import dagster as dg
from sqlalchemy import func, select

from memory_assets.common import check, corpus_store
from memory_assets.partitions import corpus_partitions
from memory_core.extraction.quality import reaction_quality, verify_mentions
from memory_core.store.schema import segment_extractions, segments
from memory_resources.storage import MemoryStorage

REACTION_SCHEMA_VALIDITY_MIN = 0.99
VOCABULARY_COVERAGE_MIN = 0.95


@dg.asset_check(
    asset="mentions",
    partitions_def=corpus_partitions,
    blocking=True,
    description="100% of mention spans verbatim in their message, inside their segment",
)
def mention_spans_verbatim(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    result = verify_mentions(corpus_store(context, storage))
    return check(result["not_verbatim"] == 0 and result["outside_segment"] == 0, **result)


@dg.asset_check(
    asset="mentions",
    partitions_def=corpus_partitions,
    description="every current segment has been answered by the teacher (none pending after an LLM outage)",
)
def every_segment_extracted(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    with corpus_store(context, storage).staging.connect() as conn:
        current = conn.execute(
            select(func.count()).select_from(segments).where(segments.c.superseded_at.is_(None))
        ).scalar_one()
        answered = conn.execute(
            select(func.count(func.distinct(segment_extractions.c.segment_id)))
            .select_from(
                segment_extractions.join(segments, segments.c.segment_id == segment_extractions.c.segment_id)
            )
            .where(segments.c.superseded_at.is_(None), segment_extractions.c.status == "done")
        ).scalar_one()
        pending = conn.execute(
            select(func.count())
            .select_from(segment_extractions)
            .where(segment_extractions.c.status == "pending")
        ).scalar_one()
    return check(
        answered >= current and pending == 0,
        dg.AssetCheckSeverity.WARN,
        current_segments=current,
        answered=answered,
        pending=pending,
    )


@dg.asset_check(
    asset="user_reactions",
    partitions_def=corpus_partitions,
    description=f"reaction schema validity ≥ {REACTION_SCHEMA_VALIDITY_MIN:.0%}",
)
def reaction_schema_validity(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    q = reaction_quality(corpus_store(context, storage))
    return check(
        q["schema_validity"] >= REACTION_SCHEMA_VALIDITY_MIN and q["stored_invalid"] == 0,
        schema_validity=q["schema_validity"],
        proposed=q["proposed"],
        schema_valid=q["schema_valid"],
        stored_invalid=q["stored_invalid"],
    )


@dg.asset_check(
    asset="user_reactions",
    partitions_def=corpus_partitions,
    description=f"controlled-vocabulary coverage ≥ {VOCABULARY_COVERAGE_MIN:.0%} (share not Other)",
)
def reaction_vocabulary_coverage(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    q = reaction_quality(corpus_store(context, storage))
    return check(
        q["share_not_other"] >= VOCABULARY_COVERAGE_MIN,
        share_not_other=q["share_not_other"],
        reactions=q["reactions"],
    )


@dg.asset_check(
    asset="user_reactions",
    partitions_def=corpus_partitions,
    blocking=True,
    description="0% NULL timestamps; every cue verbatim in its message",
)
def reaction_timestamps_and_evidence(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    q = reaction_quality(corpus_store(context, storage))
    return check(
        q["null_timestamps"] == 0 and q["cues_not_verbatim"] == 0,
        null_timestamp_rate=q["null_timestamp_rate"],
        cues_not_verbatim=q["cues_not_verbatim"],
        reactions=q["reactions"],
    )

"""Assets `mentions` and `user_reactions`: one pass of the teacher per segment fills both (≤ 1 LLM call per
segment), so they are one multi-asset in the `llm` concurrency pool."""

import dagster as dg
from pydantic import Field

from memory_assets.common import corpus_store, md_table
from memory_assets.ingestion.assets import segments
from memory_assets.partitions import corpus_partitions
from memory_core.extraction.quality import reaction_quality
from memory_core.extraction.stage import extract_corpus
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage


class ExtractionConfig(dg.Config):
    parallel_calls: int = Field(
        default=4, description="concurrent LLM calls inside one run (offline: ignored)"
    )
    reaction_retention_days: float | None = Field(
        default=None,
        description="reactions expire this many days after they are recorded (None: kept until purged)",
    )


@dg.multi_asset(
    specs=[
        dg.AssetSpec(
            "mentions",
            deps=[segments],
            group_name="extraction",
            kinds={"sqlite"},
            description="Candidate concepts per segment (teacher → Semantic Mapper): verified verbatim spans, "
            "normalised titles, consolidated_id NULL until the memory loop links them.",
        ),
        dg.AssetSpec(
            "user_reactions",
            deps=[segments],
            group_name="extraction",
            kinds={"sqlite"},
            description="The people's reactions (12-state vocabulary) in the reflective store, with retention and purge.",
        ),
    ],
    partitions_def=corpus_partitions,
    pool="llm",
    can_subset=False,
)
def extraction(
    context: dg.AssetExecutionContext, config: ExtractionConfig, storage: MemoryStorage, llm: LLMResource
):
    store = corpus_store(context, storage)
    teacher = llm.build_teacher(storage.memory_home())
    context.log.info(f"extraction teacher: {teacher.describe()}")
    with store.write_lock():
        report = extract_corpus(
            store,
            teacher,
            parallel=config.parallel_calls,
            retention_days=config.reaction_retention_days,
            log=context.log.info,
        )
    rejected = {
        k.split(":", 1)[1]: v
        for k, v in report.stats.items()
        if k.startswith(("rejected:", "spans_rejected:", "reactions_rejected:"))
    }
    teacher_meta = report.teacher.get("teacher", "")
    call_meta = {
        "teacher": teacher_meta,
        "extractor": report.extractor,
        "llm_calls": report.calls,
        "llm_cache_hits": report.cache_hits,
        "llm_attempts": report.attempts,
        "tokens_in": report.tokens_in,
        "tokens_out": report.tokens_out,
        "cost_usd": report.cost_usd,
    }
    yield dg.MaterializeResult(
        asset_key="mentions",
        metadata={
            **call_meta,
            "conversations_processed": report.conversations_processed,
            "conversations_skipped": report.conversations_skipped,
            "conversations_pending": report.conversations_pending,
            "segments_extracted": report.segments_extracted,
            "segments_reused": report.segments_reused,
            "segments_failed": report.segments_failed,
            "segments_pending": report.segments_pending,
            "candidates": report.stats["candidates"],
            "accepted": report.stats["accepted"],
            "rejected": report.stats["rejected"],
            "rejected_reasons": md_table(
                [{"reason": k, "count": v} for k, v in sorted(rejected.items(), key=lambda kv: -kv[1])]
            ),
            "residual_reasons": md_table(
                [{"reason": k, "count": v} for k, v in report.residual_reasons.most_common()]
            ),
            "schema_validity_rate": report.schema_validity,
            "span_verified_rate": report.span_verified_rate,
            "spans_offset_fixed": report.stats["spans_offset_fixed"]
            + report.stats["spans_trimmed"]
            + report.stats["spans_normalised"],
            "mentions_written": report.mentions_written,
            "seconds": round(report.seconds, 3),
        },
    )
    quality = reaction_quality(store)
    yield dg.MaterializeResult(
        asset_key="user_reactions",
        metadata={
            **call_meta,
            "reactions_written": report.reactions_written,
            "reactions_total": quality["reactions"],
            "reactions_expired_purged": report.reactions_expired,
            "retention_days": config.reaction_retention_days
            if config.reaction_retention_days is not None
            else "unlimited",
            "schema_validity": quality["schema_validity"],
            "share_not_other": quality["share_not_other"],
            "null_timestamp_rate": quality["null_timestamp_rate"],
            "by_state": md_table([{"state": k, "count": v} for k, v in quality["by_state"].items()]),
        },
    )

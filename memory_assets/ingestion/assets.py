"""Assets `messages` and `segments`."""

import dagster as dg
from pydantic import Field

from memory_assets.common import corpus_store, md_table
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import registered_source
from memory_core.ingest.loader import ingest_file
from memory_core.ingest.records import DEFAULT_MAX_MESSAGE_CHARS
from memory_core.segments import DEFAULT_TOKEN_CAP, build_segments
from memory_core.store.stats import corpus_stats
from memory_resources.storage import MemoryStorage


class MessagesConfig(dg.Config):
    max_message_chars: int = Field(
        default=DEFAULT_MAX_MESSAGE_CHARS, description="longer messages are dead-lettered"
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="ingestion",
    kinds={"sqlite"},
    description="Parse the corpus's input file into conversations and messages (source of truth); bad records are dead-lettered.",
)
def messages(
    context: dg.AssetExecutionContext, config: MessagesConfig, storage: MemoryStorage
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    source = registered_source(storage.memory_home(), store.name)
    with store.write_lock():
        report = ingest_file(
            store, source.path, source.source_format, source.record_id, config.max_message_chars
        )
    stats = corpus_stats(store)
    context.log.info(
        f"{store.name}: {report.records_in} records in, {report.stored} stored "
        f"({report.inserted} new, {report.updated} updated, {report.unchanged} unchanged), {report.dead_lettered} dead-lettered"
    )
    return dg.MaterializeResult(
        metadata={
            "source_path": dg.MetadataValue.path(source.path),
            "source_format": source.source_format,
            "records_in": report.records_in,
            "stored": report.stored,
            "inserted": report.inserted,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "dead_lettered": report.dead_lettered,
            "dead_letter_reasons": md_table(
                [{"reason": k, "count": v} for k, v in sorted(report.dead_letter_reasons.items())]
            ),
            "conversations_new": report.conversations_new,
            "conversations_changed": report.conversations_changed,
            "conversations_unchanged": report.conversations_unchanged,
            "derived_timestamp_share": round(report.derived_times / report.stored, 4)
            if report.stored
            else 0.0,
            "messages_total": stats["messages"],
            "conversations_total": stats["conversations"],
            "dead_letters_total": stats["dead_letters"],
            "seconds": round(report.seconds, 3),
            "messages_per_second": round(report.stored / report.seconds, 1) if report.seconds else 0.0,
        }
    )


class SegmentsConfig(dg.Config):
    token_cap: int = Field(default=DEFAULT_TOKEN_CAP, description="max tokens (≈ chars/4) per segment")


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="ingestion",
    deps=[messages],
    kinds={"sqlite"},
    description="Cut conversations into rounds (user turn + replies) under a token cap, with message ids and offsets.",
)
def segments(
    context: dg.AssetExecutionContext, config: SegmentsConfig, storage: MemoryStorage
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    with store.write_lock():
        report = build_segments(store, token_cap=config.token_cap)
    return dg.MaterializeResult(
        metadata={
            "segments": report.segments_current,
            "segments_new": report.segments_new,
            "segments_kept": report.segments_kept,
            "segments_superseded": report.segments_superseded,
            "conversations_processed": report.conversations_processed,
            "conversations_skipped": report.conversations_skipped,
            "messages_split": report.messages_split,
            "mean_tokens": report.mean_tokens,
            "max_tokens": report.max_tokens,
            "token_cap": config.token_cap,
        }
    )

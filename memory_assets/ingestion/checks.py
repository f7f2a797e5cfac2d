"""Contracts of the ingestion stage, as partitioned asset checks with explicit severity."""

import dagster as dg
from sqlalchemy import func, select
from sqlalchemy.orm import aliased

from memory_assets.common import check, corpus_store
from memory_assets.ingestion.assets import messages as messages_asset
from memory_assets.ingestion.assets import segments as segments_asset
from memory_assets.partitions import corpus_partitions
from memory_core.segments import verify_segments
from memory_core.store.schema import ingest_files, messages
from memory_resources.storage import MemoryStorage


@dg.asset_check(
    asset=messages_asset, partitions_def=corpus_partitions, blocking=True, description="0% NULL timestamps"
)
def no_null_timestamps(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> dg.AssetCheckResult:
    with corpus_store(context, storage).source.connect() as conn:
        nulls = conn.execute(select(func.count()).where(messages.c.created_at.is_(None))).scalar_one()
        total = conn.execute(select(func.count()).select_from(messages)).scalar_one()
    return check(nulls == 0, null_timestamps=nulls, messages=total)


@dg.asset_check(
    asset=messages_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every parent_id names a stored message",
)
def no_dangling_parents(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    parent = aliased(messages)
    with corpus_store(context, storage).source.connect() as conn:
        dangling = conn.execute(
            select(func.count())
            .select_from(messages.outerjoin(parent, messages.c.parent_id == parent.c.message_id))
            .where(messages.c.parent_id.is_not(None), parent.c.message_id.is_(None))
        ).scalar_one()
    return check(dangling == 0, dangling_parent_ids=dangling)


@dg.asset_check(
    asset=messages_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="records in = stored + dead-lettered (last ingested file)",
)
def input_accounting(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> dg.AssetCheckResult:
    with corpus_store(context, storage).source.connect() as conn:
        last = (
            conn.execute(select(ingest_files).order_by(ingest_files.c.file_id.desc()).limit(1))
            .mappings()
            .first()
        )
    if last is None:
        return check(False, problem="no file ingested yet")
    return check(
        last["records_in"] == last["stored"] + last["dead_lettered"],
        records_in=last["records_in"],
        stored=last["stored"],
        dead_lettered=last["dead_lettered"],
    )


@dg.asset_check(
    asset=segments_asset,
    partitions_def=corpus_partitions,
    blocking=True,
    description="every message is in a segment and every segment span maps back to its message text",
)
def segments_trace_to_messages(
    context: dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> dg.AssetCheckResult:
    result = verify_segments(corpus_store(context, storage))
    return check(
        result["uncovered_messages"] == 0 and result["bad_spans"] == 0,
        uncovered_messages=result["uncovered_messages"],
        bad_spans=result["bad_spans"],
        segments=result["segments"],
    )

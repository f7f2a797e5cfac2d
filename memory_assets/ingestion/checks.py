"""Contracts of the ingestion stage (memory_core.ingest.checks, memory_core.segments) as asset checks."""

import dagster as dg

from memory_assets.common import corpus_check, corpus_store
from memory_assets.ingestion.assets import messages, segments
from memory_core.ingest import checks as contracts
from memory_core.reports import CheckResult
from memory_core.segments import segments_trace_to_messages as trace_segments
from memory_resources.storage import MemoryStorage


@corpus_check(messages, blocking=True, description="0% NULL timestamps")
def no_null_timestamps(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.no_null_timestamps(corpus_store(context, storage))


@corpus_check(messages, blocking=True, description="every parent_id names a stored message")
def no_dangling_parents(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.no_dangling_parents(corpus_store(context, storage))


@corpus_check(
    messages,
    blocking=True,
    description="records in (counted apart from the parser) = stored + dead-lettered + structural (last file)",
)
def input_accounting(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return contracts.input_accounting(corpus_store(context, storage))


@corpus_check(
    segments,
    blocking=True,
    description="every message is in a segment and every segment span maps back to its message text",
)
def segments_trace_to_messages(context: dg.AssetCheckExecutionContext, storage: MemoryStorage) -> CheckResult:
    return trace_segments(corpus_store(context, storage))

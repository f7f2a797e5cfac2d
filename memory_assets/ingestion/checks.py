"""Contracts of the ingestion stage (memory_core.ingest.checks, memory_core.segments), evaluated as asset
checks in the step of the asset they check."""

from memory_assets.common import Contract
from memory_core.ingest import checks as contracts
from memory_core.segments import segments_trace_to_messages

MESSAGES = (
    Contract("no_null_timestamps", "0% NULL timestamps", contracts.no_null_timestamps, blocking=True),
    Contract(
        "no_dangling_parents",
        "every parent_id names a stored message",
        contracts.no_dangling_parents,
        blocking=True,
    ),
    Contract(
        "input_accounting",
        "records in (counted apart from the parser) = stored + dead-lettered + structural (last file)",
        contracts.input_accounting,
        blocking=True,
    ),
)

SEGMENTS = (
    Contract(
        "segments_trace_to_messages",
        "every message is in a segment and every segment span maps back to its message text",
        segments_trace_to_messages,
        blocking=True,
    ),
)

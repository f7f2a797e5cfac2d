"""Parsers for the four input formats and the loader that writes them to a corpus's source store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

from memory_core.errors import InputError
from memory_core.ingest.benchmarks import lme_question_ids, locomo_sample_ids, parse_locomo, parse_longmemeval
from memory_core.ingest.chatgpt import parse_chatgpt
from memory_core.ingest.jsonl import parse_jsonl
from memory_core.ingest.jsonstream import iter_json_array, peek_top_level
from memory_core.ingest.records import DeadLetter, ParsedConversation

Parser = Callable[..., Iterator[ParsedConversation | DeadLetter]]

PARSERS: dict[str, Parser] = {
    "chatgpt": parse_chatgpt,
    "longmemeval": parse_longmemeval,
    "locomo": parse_locomo,
    "jsonl": parse_jsonl,
}
FORMATS = tuple(PARSERS)


def detect_format(path: Path) -> str:
    """Guess the format from the file: JSONL by extension, JSON documents by their first record's keys."""
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        return "jsonl"
    head = peek_top_level(path)
    if head not in ("[", "{"):
        raise InputError(f"{path}: not a JSON document or JSONL file; pass --format")
    first = next(iter(iter_json_array(path, allow_object=True)), None)
    if isinstance(first, dict):
        if "mapping" in first:
            return "chatgpt"
        if "haystack_sessions" in first:
            return "longmemeval"
        if "conversation" in first and "sample_id" in first:
            return "locomo"
    raise InputError(f"{path}: cannot tell the format from its first record; pass --format")


def record_ids(path: Path, source_format: str) -> list[str]:
    """Ids of the independent records of a benchmark file (LongMemEval questions, LoCoMo samples)."""
    if source_format == "longmemeval":
        return lme_question_ids(path)
    if source_format == "locomo":
        return locomo_sample_ids(path)
    return []


__all__ = ["FORMATS", "PARSERS", "DeadLetter", "ParsedConversation", "detect_format", "record_ids"]

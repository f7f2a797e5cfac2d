"""What a parser yields: parsed conversations and dead letters, plus helpers every parser shares."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

ROLES = ("user", "assistant", "system", "tool")
DEFAULT_MAX_MESSAGE_CHARS = 20_000_000
EXCERPT_CHARS = 500

# Time between consecutive turns when the source gives only a session date (order-preserving offset).
DERIVED_TURN_STEP = timedelta(seconds=1)


@dataclass
class DeadLetter:
    """An input record that could not be ingested, and why."""

    source_ref: str
    reason_code: str
    reason: str
    payload_excerpt: str = ""
    records: int = 1  # how many input records this dead letter accounts for


@dataclass
class ParsedMessage:
    source_ref: str
    role: str
    author: str
    text: str
    created_at: datetime | None  # naive UTC; None = derive from neighbours
    parent_ref: str | None = None  # source_ref of the parent message in the same conversation
    attributes: dict = field(default_factory=dict)
    time_derived: bool = False
    source_id: str | None = None  # the record's own UUID when the source has one
    attributes_json: str | None = None  # canonical JSON of `attributes`, computed once by the loader


@dataclass
class ParsedConversation:
    source_ref: str
    title: str
    created_at: datetime | None
    messages: list[ParsedMessage]  # in position order
    attributes: dict = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    records_seen: int = 0  # input message records seen for this conversation (stored or not)
    source_id: str | None = None


def excerpt(payload: object, limit: int = EXCERPT_CHARS) -> str:
    """A short, always-storable rendering of a bad record."""
    if not isinstance(payload, str):
        try:
            payload = json.dumps(payload, ensure_ascii=True, default=str)
        except (TypeError, ValueError):
            payload = repr(payload)
    text = payload.encode("utf-8", "backslashreplace").decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + f"… [{len(text)} chars]"


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def invalid_text_reason(text: str) -> str | None:
    """Why a text cannot be stored as-is (invalid UTF-8 in the input shows up as lone surrogates)."""
    if text.isascii():
        return "NUL character in text" if "\x00" in text else None
    match = _SURROGATE_RE.search(text)
    if match:
        return f"invalid UTF-8 or unpaired surrogate at char {match.start()}"
    if "\x00" in text:
        return "NUL character in text"
    return None


def clean_text(text: str) -> str:
    """`text` with undecodable input (lone surrogates) shown as backslash escapes: for ids and metadata,
    never for message texts (those are dead-lettered instead)."""
    if text.isascii() or not _SURROGATE_RE.search(text):
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_json(value: object) -> object:
    """`clean_text` applied to every string of a JSON-able value."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean_json(v) for v in value]
    return value


def check_text(text: object, max_chars: int) -> tuple[str | None, str | None]:
    """(reason_code, reason) when a message text is unusable, else (None, None)."""
    if not isinstance(text, str):
        return "bad_shape", f"text is {type(text).__name__}, not a string"
    if not text.strip():
        return "empty_text", "empty text"
    if len(text) > max_chars:
        return "too_large", f"text has {len(text)} chars, over the limit of {max_chars}"
    bad = invalid_text_reason(text)
    if bad:
        return "invalid_utf8", bad
    return None, None


def to_utc_naive(value: datetime) -> datetime:
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


def parse_timestamp(value: object) -> datetime | None:
    """Epoch seconds/milliseconds or ISO 8601 → naive UTC. None when absent; ValueError when malformed."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a timestamp: {value!r}")
    if isinstance(value, int | float):
        seconds = float(value)
        if seconds > 1e11:  # milliseconds
            seconds /= 1000.0
        return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    if isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"-?\d+(\.\d+)?", text):
            return parse_timestamp(float(text))
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        return to_utc_naive(datetime.fromisoformat(text))
    raise ValueError(f"not a timestamp: {value!r}")


def fill_missing_times(messages: list[ParsedMessage], anchor: datetime | None) -> bool:
    """Give every message a time, in order: the previous known time (or the anchor) + a step per turn.

    Messages before the first known time count back from it. Returns False when there is no time at all.
    """
    known = [i for i, m in enumerate(messages) if m.created_at is not None]
    if not known and anchor is None:
        return False
    last, from_message = anchor, False
    for i, msg in enumerate(messages):
        if msg.created_at is not None:
            last, from_message = msg.created_at, True
            continue
        if last is None:  # before the first known time, no anchor: count back from it
            first = known[0]
            msg.created_at = messages[first].created_at - DERIVED_TURN_STEP * (first - i)
        else:
            # the first turn of a session sits at the session date itself
            last = last + DERIVED_TURN_STEP if from_message else last
            msg.created_at, from_message = last, True
        msg.time_derived = True
    return True

"""What a parser yields: parsed conversations and dead letters, plus helpers every parser shares."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from memory_core.errors import InputError

ROLES = ("user", "assistant", "system", "tool")
DEFAULT_MAX_MESSAGE_CHARS = 20_000_000
EXCERPT_CHARS = 500

# Time between consecutive turns when the source gives only a session date (order-preserving offset).
DERIVED_TURN_STEP = timedelta(seconds=1)

T = TypeVar("T")


@dataclass
class DeadLetter:
    """One input record that could not be ingested, and why (one row of `dead_letters` each)."""

    source_ref: str
    reason_code: str
    reason: str
    payload_excerpt: str = ""


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
    dead_ref: str | None = None  # its `source_ref` in dead_letters when that differs (e.g. "conv/node")


@dataclass
class ParsedConversation:
    source_ref: str
    title: str
    created_at: datetime | None
    messages: list[ParsedMessage]  # in position order
    attributes: dict = field(default_factory=dict)
    dead_letters: list[DeadLetter] = field(default_factory=list)
    records_seen: int = 0  # input message records seen for this conversation (stored, dead or structural)
    source_id: str | None = None
    # records that are the export's structure, not conversation (ChatGPT's hidden system nodes): counted
    # apart from stored and dead-lettered ones
    structural: list[str] = field(default_factory=list)


def excerpt(payload: object, limit: int = EXCERPT_CHARS) -> str:
    """A short, always-storable rendering of a bad record."""
    if not isinstance(payload, str):
        try:
            payload = json.dumps(payload, ensure_ascii=True, default=str)
        except (TypeError, ValueError, RecursionError):
            payload = f"<{type(payload).__name__}>"
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
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # NaN / Infinity are not JSON
    return value


def label(value: object, limit: int = 32) -> str:
    """How a reason names a value from the input: a short word as itself, anything else by its type and
    size, so no message text ever reaches a reason, an error or a log line."""
    if isinstance(value, str):
        if len(value) <= limit and re.fullmatch(r"[\w.:/@#\-]*", value):
            return repr(value)
        return f"a string of {len(value)} chars"
    if value is None or isinstance(value, bool | int | float):
        return "null" if value is None else type(value).__name__
    return f"a JSON {_JSON_TYPES.get(type(value), type(value).__name__)}"


_JSON_TYPES = {dict: "object", list: "array", str: "string"}


def scalar_ref(value: object) -> str | None:
    """An id field as text: strings and numbers; None for null, empty, booleans, objects and arrays."""
    if isinstance(value, bool) or value is None or value == "":
        return None
    return str(value) if isinstance(value, str | int | float) else None


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


# Epoch numbers are seconds; a number that cannot be seconds (past 9999-12-31) is read as milliseconds.
_MAX_EPOCH_SECONDS = (
    datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
).total_seconds()


def parse_timestamp(value: object) -> datetime | None:
    """Epoch seconds (or milliseconds, see above) or ISO 8601 → naive UTC between years 1 and 9999. None when
    absent; ValueError when malformed or out of range (never OverflowError or OSError)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a timestamp")
    try:
        if isinstance(value, int | float):
            return _from_epoch(float(value))
        if isinstance(value, str):
            text = value.strip()
            if re.fullmatch(r"-?\d+(\.\d+)?", text):
                return _from_epoch(float(text))
            if text.endswith("Z"):
                text = text[:-1] + "+00:00"
            return to_utc_naive(datetime.fromisoformat(text))
    except (OverflowError, OSError) as exc:
        raise ValueError("timestamp out of range") from exc
    raise ValueError(f"{label(value)} is not a timestamp")


def _from_epoch(seconds: float) -> datetime:
    if not math.isfinite(seconds):
        raise ValueError("timestamp is not a finite number")
    if abs(seconds) > _MAX_EPOCH_SECONDS:
        seconds /= 1000.0  # milliseconds
        if abs(seconds) > _MAX_EPOCH_SECONDS:
            raise ValueError("timestamp out of range")
    return datetime(1970, 1, 1) + timedelta(seconds=seconds)


def timestamp_unit(value: object) -> str:
    """'ms' when `parse_timestamp` read an epoch number as milliseconds, else 's' (kept as an attribute)."""
    try:
        number = float(value.strip() if isinstance(value, str) else value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):
        return "s"
    return "ms" if math.isfinite(number) and abs(number) > _MAX_EPOCH_SECONDS else "s"


def record_time(value: object, attrs: dict, field: str) -> datetime | None:
    """A record's own time field: parsed, with `time_unit: ms` in `attrs` when an epoch number was read as
    milliseconds, or None (to be derived) with the unreadable value kept as `unparsed_<field>`."""
    try:
        created = parse_timestamp(value)
    except ValueError:
        attrs[f"unparsed_{field}"] = excerpt(value, 100)
        return None
    if created is not None and timestamp_unit(value) == "ms":
        attrs["time_unit"] = "ms"
    return created


def fill_missing_times(messages: list[ParsedMessage], anchor: datetime | None) -> bool:
    """Give every message a time, in order: the previous known time (or the anchor) + a step per turn.

    Messages before the first known time count back from it. A derived time that would fall outside years
    1-9999 stays None (the parser dead-letters it). Returns False when there is no time at all.
    """
    known = [i for i, m in enumerate(messages) if m.created_at is not None]
    if not known and anchor is None:
        return False
    last, from_message = anchor, False
    for i, msg in enumerate(messages):
        if msg.created_at is not None:
            last, from_message = msg.created_at, True
            continue
        try:
            if last is None:  # before the first known time, no anchor: count back from it
                first = known[0]
                msg.created_at = messages[first].created_at - DERIVED_TURN_STEP * (first - i)
            else:
                # the first turn of a session sits at the session date itself
                last = last + DERIVED_TURN_STEP if from_message else last
                msg.created_at, from_message = last, True
        except OverflowError:
            msg.created_at = None
            continue
        msg.time_derived = True
    return True


def keep_timed(conv: ParsedConversation, timed: bool, why: str) -> None:
    """Dead-letter the messages of `conv` left without a time: all of them when `timed` is False (nothing to
    derive a time from, `why`), else those whose derived time fell out of range."""
    kept = []
    for msg in conv.messages:
        if timed and msg.created_at is not None:
            kept.append(msg)
            continue
        reason = why if not timed else "derived time out of range (years 1-9999)"
        conv.dead_letters.append(
            DeadLetter(msg.dead_ref or msg.source_ref, "no_timestamp", reason, excerpt(msg.text))
        )
    conv.messages = kept


def shielded(
    parse: Callable[..., Iterable[T]], args: tuple, raw: object, ref: str, records: int
) -> list[T | DeadLetter]:
    """What `parse(*args)` yields for one input element `raw`, or - when the parser fails on it, a bug on
    input nobody foresaw - its `records` records dead-lettered (`parse_error`, refs `<ref>#<k>`), so one
    bad record never loses the file. The reason names the exception's type only (never its message, which
    may quote the input)."""
    try:
        return list(parse(*args))
    except (InputError, RecursionError, MemoryError):
        raise
    except Exception as exc:
        why = f"the parser failed on this record ({type(exc).__name__})"
        return [DeadLetter(f"{ref}#{k}", "parse_error", why, excerpt(raw)) for k in range(records)]

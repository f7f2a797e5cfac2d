"""Plain JSONL messages: one object per line with `id`, `conversation_id`, `role`, `author`, `text`,
`created_at` (ISO 8601 or epoch seconds), `parent_id` (optional), `title` (optional).

Lines stream; messages are grouped by conversation (a conversation's lines may be interleaved with
others') and keep their file order. A missing or malformed `created_at` is derived from the neighbouring
messages and flagged; a conversation with no time at all is dead-lettered.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from memory_core.ingest.jsonstream import iter_jsonl
from memory_core.ingest.records import (
    ROLES,
    DeadLetter,
    ParsedConversation,
    ParsedMessage,
    check_text,
    excerpt,
    fill_missing_times,
    invalid_text_reason,
    keep_timed,
    label,
    record_time,
    scalar_ref,
    shielded,
)


class _Lines:
    """The conversations of a JSONL file as its lines arrive."""

    def __init__(self, max_chars: int, record_id: str | None):
        self.max_chars = max_chars
        self.record_id = record_id
        self.conversations: dict[str, ParsedConversation] = {}
        self.seen_ids: set[str] = set()

    def line(self, number: int, value: object) -> list[DeadLetter]:
        """Take one decoded line: dead letters that belong to no conversation are returned, the others go
        to their conversation."""
        line_ref = f"line:{number}"
        if not isinstance(value, dict):
            return [
                DeadLetter(line_ref, "bad_shape", f"line is {label(value)}, not an object", excerpt(value))
            ]
        raw_conv = value.get("conversation_id")
        conv_ref = scalar_ref(raw_conv)
        if conv_ref is None:
            problem = (
                "without a conversation_id"
                if raw_conv in (None, "")
                else f"whose conversation_id is {label(raw_conv)}"
            )
            return [DeadLetter(line_ref, "bad_shape", f"message {problem}", excerpt(value))]
        if self.record_id is not None and conv_ref != self.record_id:
            return []
        conv = self.conversations.get(conv_ref)
        if conv is None:
            conv = self.conversations[conv_ref] = ParsedConversation(
                conv_ref, "", None, [], source_id=conv_ref
            )
        message = self._message(conv, number, line_ref, value)
        conv.records_seen += 1  # after the message: a line the parser fails on is its own dead letter
        if message is not None:
            conv.messages.append(message)
        return []

    def _message(
        self, conv: ParsedConversation, number: int, line_ref: str, value: dict
    ) -> ParsedMessage | None:
        dead = conv.dead_letters.append
        raw_id = value.get("id")
        ref = scalar_ref(raw_id)
        if raw_id not in (None, "") and ref is None:
            dead(DeadLetter(line_ref, "bad_shape", f"id is {label(raw_id)}", excerpt(value)))
            return None
        ref = ref or line_ref
        bad = invalid_text_reason(ref) or invalid_text_reason(conv.source_ref)
        if bad:
            dead(DeadLetter(line_ref, "invalid_utf8", f"id: {bad}", excerpt(value)))
            return None
        if ref in self.seen_ids:
            dead(
                DeadLetter(
                    f"{ref}@{line_ref}", "duplicate_id", f"message id {label(ref)} repeats", excerpt(value)
                )
            )
            return None
        at = f"{ref}@{line_ref}"  # every dead letter names its line: ids may repeat on bad lines
        role = value.get("role")
        if role not in ROLES:
            dead(DeadLetter(at, "unknown_role", f"unknown role {label(role)}", excerpt(value)))
            return None
        code, reason = check_text(value.get("text"), self.max_chars)
        if code:
            dead(DeadLetter(at, code, reason, excerpt(value)))
            return None
        raw_parent = value.get("parent_id")
        parent = scalar_ref(raw_parent)
        if raw_parent not in (None, "") and parent is None:
            dead(DeadLetter(at, "bad_shape", f"parent_id is {label(raw_parent)}", excerpt(value)))
            return None
        attrs: dict = {"line": number}
        created = record_time(value.get("created_at"), attrs, "created_at")
        if isinstance(value.get("title"), str) and value["title"] and not conv.title:
            conv.title = value["title"]
        author = value.get("author")
        self.seen_ids.add(ref)
        return ParsedMessage(
            source_ref=ref,
            role=role,
            author=author if isinstance(author, str) and author else role,
            text=value["text"],
            created_at=created,
            parent_ref=parent,
            attributes=attrs,
            source_id=ref,
            dead_ref=at,
        )


def _finish(conv: ParsedConversation) -> list[ParsedConversation]:
    refs = {m.source_ref for m in conv.messages}
    for msg in conv.messages:
        if msg.parent_ref is not None and msg.parent_ref not in refs:
            msg.attributes["missing_parent"] = msg.parent_ref
            msg.parent_ref = None
    timed = fill_missing_times(conv.messages, None)
    keep_timed(conv, timed, "no created_at in this message or any other of its conversation")
    times = [m.created_at for m in conv.messages]
    conv.created_at = min(times) if times else None
    return [conv]


def parse_jsonl(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    lines = _Lines(max_chars, record_id)
    for number, value, error, raw in iter_jsonl(path):
        line_ref = f"line:{number}"
        if error:
            yield DeadLetter(
                line_ref,
                "invalid_utf8" if "UTF-8" in error else "malformed_json",
                error,
                excerpt(raw.decode("utf-8", "backslashreplace")),
            )
            continue
        yield from shielded(lines.line, (number, value), value, line_ref, 1)
    for conv in lines.conversations.values():
        records = conv.records_seen
        yield from shielded(_finish, (conv,), conv.source_ref, conv.source_ref, records)

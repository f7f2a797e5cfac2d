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
    parse_timestamp,
)


def parse_jsonl(
    path: Path, max_chars: int, record_id: str | None = None
) -> Iterator[ParsedConversation | DeadLetter]:
    conversations: dict[str, ParsedConversation] = {}
    seen_ids: set[str] = set()
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
        if not isinstance(value, dict):
            yield DeadLetter(
                line_ref, "bad_shape", f"line is a JSON {type(value).__name__}, not an object", excerpt(value)
            )
            continue
        conv_ref = value.get("conversation_id")
        if conv_ref is None or conv_ref == "":
            yield DeadLetter(line_ref, "bad_shape", "message without a conversation_id", excerpt(value))
            continue
        conv_ref = str(conv_ref)
        if record_id is not None and conv_ref != record_id:
            continue
        conv = conversations.get(conv_ref)
        if conv is None:
            conv = conversations[conv_ref] = ParsedConversation(conv_ref, "", None, [], source_id=conv_ref)
        conv.records_seen += 1
        ref = str(value["id"]) if value.get("id") not in (None, "") else line_ref
        bad = invalid_text_reason(ref) or invalid_text_reason(conv_ref)
        if bad:
            conv.dead_letters.append(DeadLetter(line_ref, "invalid_utf8", f"id: {bad}", excerpt(value)))
            continue
        if ref in seen_ids:
            conv.dead_letters.append(
                DeadLetter(
                    f"{ref}@{line_ref}",
                    "duplicate_id",
                    f"message id {ref!r} appears more than once",
                    excerpt(value),
                )
            )
            continue
        role = value.get("role")
        if role not in ROLES:
            conv.dead_letters.append(
                DeadLetter(ref, "unknown_role", f"unknown role {role!r}", excerpt(value))
            )
            continue
        code, reason = check_text(value.get("text"), max_chars)
        if code:
            conv.dead_letters.append(DeadLetter(ref, code, reason, excerpt(value)))
            continue
        attrs: dict = {"line": number}
        try:
            created = parse_timestamp(value.get("created_at"))
        except (ValueError, OverflowError, OSError):
            created = None
            attrs["unparsed_created_at"] = excerpt(value.get("created_at"), 100)
        if isinstance(value.get("title"), str) and value["title"] and not conv.title:
            conv.title = value["title"]
        parent = value.get("parent_id")
        seen_ids.add(ref)
        conv.messages.append(
            ParsedMessage(
                source_ref=ref,
                role=role,
                author=str(value.get("author") or role),
                text=value["text"],
                created_at=created,
                parent_ref=str(parent) if parent not in (None, "") else None,
                attributes=attrs,
                source_id=ref,
            )
        )
    for conv in conversations.values():
        refs = {m.source_ref for m in conv.messages}
        for msg in conv.messages:
            if msg.parent_ref is not None and msg.parent_ref not in refs:
                msg.attributes["missing_parent"] = msg.parent_ref
                msg.parent_ref = None
        if not fill_missing_times(conv.messages, None):
            for msg in conv.messages:
                conv.dead_letters.append(
                    DeadLetter(
                        msg.source_ref,
                        "no_timestamp",
                        "no created_at in this message or any other of its conversation",
                        excerpt(msg.text),
                    )
                )
            conv.messages = []
        timed = [m.created_at for m in conv.messages]
        conv.created_at = min(timed) if timed else None
        yield conv

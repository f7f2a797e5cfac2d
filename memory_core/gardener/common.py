"""What both phases of the gardener read beyond the concepts: the mentions a concept absorbed (its evidence
items), the named people of each conversation, and which concept types may denote one thing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from sqlalchemy import select

from memory_core.store.db import CorpusStore
from memory_core.store.schema import mentions, messages

# pairs of types that may denote one thing (triage proposes merges across them, Phase 1 merges across them)
COMPATIBLE_TYPES = ("project|goal", "project|entity", "belief|behavioral_pattern", "tension|belief")
GENERIC_AUTHORS = {"", "user", "assistant", "system", "tool"}
# what the gardener reads of a mention (the evidence item)
MENTION_COLUMNS = [
    mentions.c[name]
    for name in (
        "mention_id",
        "message_id",
        "segment_id",
        "conversation_id",
        "surface",
        "title",
        "type",
        "description",
        "aliases",
        "confidence",
        "message_created_at",
    )
]
_CHUNK = 500


def compatible(a: str, b: str, pairs: Iterable[str] = COMPATIBLE_TYPES) -> bool:
    pairs = tuple(pairs)
    return a == b or f"{a}|{b}" in pairs or f"{b}|{a}" in pairs


def mention_info(store: CorpusStore, mention_ids: list[str]) -> dict[str, dict]:
    """mention id -> its evidence-item row (`MENTION_COLUMNS`, aliases as a list)."""
    out: dict[str, dict] = {}
    with store.staging.connect() as conn:
        for i in range(0, len(mention_ids), _CHUNK):
            for r in conn.execute(
                select(*MENTION_COLUMNS).where(mentions.c.mention_id.in_(mention_ids[i : i + _CHUNK]))
            ).mappings():
                out[r["mention_id"]] = {**dict(r), "aliases": list(r["aliases"] or [])}
    return out


def existing_messages(store: CorpusStore, message_ids: Iterable[str]) -> set[str]:
    """The ids among `message_ids` that name stored source messages (what a citation must resolve to)."""
    wanted = sorted(set(message_ids))
    known: set[str] = set()
    with store.source.connect() as conn:
        for i in range(0, len(wanted), _CHUNK):
            known |= set(
                conn.execute(
                    select(messages.c.message_id).where(messages.c.message_id.in_(wanted[i : i + _CHUNK]))
                ).scalars()
            )
    return known


def named_participants(
    store: CorpusStore, conversation_ids: list[str] | None = None
) -> dict[str, frozenset[str]]:
    """conversation -> the named people speaking in it (message authors that are not bare role names);
    conversations without one are left out. All conversations, or `conversation_ids`."""
    people: dict[str, set[str]] = defaultdict(set)
    query = select(messages.c.conversation_id, messages.c.author).group_by(
        messages.c.conversation_id, messages.c.author
    )
    chunks = (
        [None]
        if conversation_ids is None
        else [conversation_ids[i : i + _CHUNK] for i in range(0, len(conversation_ids), _CHUNK)]
    )
    with store.source.connect() as conn:
        for chunk in chunks:
            q = query if chunk is None else query.where(messages.c.conversation_id.in_(chunk))
            for conversation_id, author in conn.execute(q):
                name = (author or "").strip()
                if name.casefold() not in GENERIC_AUTHORS:
                    people[conversation_id].add(name)
    return {c: frozenset(p) for c, p in people.items()}

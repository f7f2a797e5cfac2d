"""The reflective layer's boundary (docs/architecture.md §8, §11): user reactions live apart from the rest of memory,
expire after the configured retention, can be purged (`reflective_purge`), and stay purged: a purged
message gets a tombstone, and no later extraction writes a reaction on it until the user lifts it.

What counts as reflective content, besides the reactions themselves: a hypothesis about a person's own
emotional state. A mention of a state-like type (tension, belief, behavioral_pattern) whose title,
description or evidence names an affective state of the reaction lexicon ("The user feels anxious", "The
user is so frustrated", "I always get nervous before exams") is one; it is withheld from
the concept layer, where no access flag guards it, and the reaction of the same cue stays in the
reflective store. A difficulty about the world ("The user's left knee hurts after long runs", "the budget
conflicts with the timeline") is not, and neither are events, goals, entities or projects, which can
carry a feeling word without being about it ("excited about the trip to Kyoto in May" is a trip).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete, func, insert, select

from memory_core.extraction.reactions import FEELINGS
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import messages, reaction_tombstones, user_reactions

REFLECTIVE_TYPES = ("tension", "belief", "behavioral_pattern")
# affective states: a hypothesis naming one is about how the person feels (the cognitive ones - clarity,
# insight, determination, confusion - say what the person thinks or intends, a fact like any other)
AFFECTIVE_STATES = ("Frustration", "Anxiety", "Exhaustion", "Overwhelmed", "Joy", "Inspiration", "Other")
# feeling words that mostly describe things, not the person ("an amazing view", "a confusing form")
_DESCRIBES_THINGS = {"amazing", "awesome", "fantastic", "wonderful", "exciting", "thrilling", "delightful",
                     "inspiring", "confusing", "annoying", "moved", "lost", "content", "clearer"}  # fmt: skip
_FEELING = re.compile(
    r"\b(?:" + "|".join(words for words, state in FEELINGS.items() if state in AFFECTIVE_STATES) + r")\b",
    re.I,
)
_NEGATED = re.compile(r"\b(not|n't|never|no longer|hardly)\b[\w\s]{0,12}$", re.I)


def names_feeling(text: str) -> str | None:
    """The first feeling word `text` attributes to someone (not negated, not a thing's quality), or None."""
    for m in _FEELING.finditer(text or ""):
        word = m.group().lower()
        if word in _DESCRIBES_THINGS or _NEGATED.search(text[max(0, m.start() - 24) : m.start()]):
            continue
        return word
    return None


def is_reflective(concept_type: str, *texts: str) -> bool:
    """Whether a concept hypothesis is about a person's emotional state (see the module docstring)."""
    return concept_type in REFLECTIVE_TYPES and any(names_feeling(t) for t in texts)


def withhold_reflective(mention_rows: list[dict]) -> tuple[list[dict], int]:
    """The mentions that may enter the concept layer, and how many reflective ones were withheld."""
    kept = [
        m for m in mention_rows if not is_reflective(m["type"], m["title"], m["description"], m["surface"])
    ]
    return kept, len(mention_rows) - len(kept)


# ------------------------------------------------------------------------------------------ tombstones
def tombstone(store: CorpusStore, message_ids: Iterable[str], scope: str, now: datetime | None = None) -> int:
    """Mark messages whose reactions were purged; returns how many new tombstones."""
    now = now or utcnow()
    ids = set(message_ids)
    with store.reflective.begin() as conn:
        have = set(conn.execute(select(reaction_tombstones.c.message_id)).scalars())
        rows = [dict(message_id=m, purged_at=now, scope=scope) for m in sorted(ids - have)]
        for i in range(0, len(rows), 5000):
            conn.execute(insert(reaction_tombstones), rows[i : i + 5000])
    return len(rows)


def tombstoned(store: CorpusStore) -> set[str]:
    with store.reflective.connect() as conn:
        return set(conn.execute(select(reaction_tombstones.c.message_id)).scalars())


def drop_tombstoned(reaction_rows: list[dict], tombstones: set[str]) -> tuple[list[dict], int]:
    """The reactions that may be written, and how many fell on a purged message."""
    kept = [r for r in reaction_rows if r["message_id"] not in tombstones]
    return kept, len(reaction_rows) - len(kept)


def lift_tombstones(store: CorpusStore) -> int:
    """The user asks for reactions again: the next extraction of a segment may write them."""
    with store.reflective.begin() as conn:
        return conn.execute(delete(reaction_tombstones)).rowcount or 0


def all_message_ids(store: CorpusStore) -> list[str]:
    with store.source.connect() as conn:
        return list(conn.execute(select(messages.c.message_id)).scalars())


# ------------------------------------------------------------------------------------------ retention
def reaction_count(store: CorpusStore) -> int:
    with store.reflective.connect() as conn:
        return conn.execute(select(func.count()).select_from(user_reactions)).scalar_one()

"""Which concept types a question asks about, from its wording: "When did …" asks for an event, "What is
she planning …" for a goal, "What does he think of …" for a belief. The concept path lends concepts of an
asked type more (`RetrievalSettings.concept_type_boost`): the typed hierarchy routes the question, where a
flat index only matches words.

The cues are English words, written before any measurement; only the boost was chosen on the dev split
(LoCoMo conv-26, tune: recall_frac@5 0.7178 → 0.7211 at every boost from 0.3 to 2.0, 1.0 the best
ndcg@10; confirmed on conv-30/41/42/43: 0.7251 → 0.7265; LongMemEval dev recall_all@5 0.673 → 0.691, all
of it on the tune side, 0.600 → 0.633, confirm unchanged at 0.760).
"""

from __future__ import annotations

import re

_CUES: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (
        re.compile(r"^\s*when\b|\bwhat (?:date|day|month|year|time)\b|\bhow long ago\b", re.I),
        frozenset({"event"}),
    ),
    (
        re.compile(
            r"\b(?:plans?|planning|wants?|goals?|going to|hopes?|dreams?|intends?|decided|pursue|career)\b",
            re.I,
        ),
        frozenset({"goal"}),
    ),
    (
        re.compile(
            r"\b(?:think|thinks|feels?|believes?|opinion|favou?rite|likes?|loves?|enjoys?|prefers?)\b", re.I
        ),
        frozenset({"belief", "behavioral_pattern"}),
    ),
    (
        re.compile(r"\b(?:often|usually|always|habits?|activities|hobbies|hobby)\b", re.I),
        frozenset({"behavioral_pattern", "event"}),
    ),
)


def asked_concept_types(question: str) -> frozenset[str]:
    """The concept types the question's wording asks about (empty: no cue, no preference)."""
    return frozenset().union(*(types for cue, types in _CUES if cue.search(question)))

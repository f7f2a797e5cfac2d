"""The slot vocabulary as values are compared: normalised values, subjects and qualifiers.

Whoever filled a claim (the offline slot rules, an LLM) wrote its value and qualifier in its own words;
histories compare them normalised: lower case, no articles or possessives, no trailing "now" / "these
days", numbers as digits, weekday plurals singular, "7:00 pm" as "7pm". Two values are the same when their
normalised forms are equal or the words of one are all in the other ("Civic" and "Honda Civic"). A subject
is "speaker" (resolved to the message's author) or a named person.
"""

from __future__ import annotations

import re

from memory_core.ontology.claims import SLOT_NAMES, SPEAKER
from memory_core.revision.valid_time import NUMBER_WORDS

NUMERIC_SLOTS = frozenset({"possession", "count", "age"})
ROLE_AUTHORS = frozenset({"user", "assistant", "system", "tool", "human", "ai", "bot", "me", "speaker"})
_LEADING = re.compile(r"^(?:(?:the|a|an|my|our|his|her|their|your|some|new|current|now)\s+)+", re.I)
_TRAILING = re.compile(
    r"(?:\s+(?:now|these days|nowadays|currently|again|anymore|any more|lately|already|too|as well|so far|"
    r"in total|total|right now|at the moment))+$",
    re.I,
)
_ORDINALS = {"second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
             "ninth": 9, "tenth": 10}  # fmt: skip
_WORD_NUMBER = re.compile(r"\b(" + "|".join(sorted(NUMBER_WORDS, key=len, reverse=True)) + r")\b", re.I)
_COUNT_WORD = re.compile(r"\b(one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)\b", re.I)
_TIME = re.compile(r"\b(\d{1,2})(?::(\d\d))?\s*([ap])\.?\s*m\.?\b", re.I)
_IRREGULAR_SINGULAR = {"children": "child", "people": "person", "women": "woman", "men": "man",
                       "feet": "foot", "teeth": "tooth", "mice": "mouse", "geese": "goose",
                       "series": "series", "species": "species", "glasses": "glasses"}  # fmt: skip


def singular(word: str) -> str:
    """A plural noun's singular, by the common English rules (enough for qualifiers)."""
    w = word.lower().strip()
    if w in _IRREGULAR_SINGULAR:
        return _IRREGULAR_SINGULAR[w]
    if " " in w:
        head, last = w.rsplit(" ", 1)
        return f"{head} {singular(last)}"
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith(("ches", "shes", "sses", "xes", "zes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def number_of(text: str) -> int | None:
    """The number a count says ("three" → 3, "a third cat" → 3, "12" → 12), or None."""
    text = text.strip().lower()
    m = re.search(r"\d+", text)
    if m:
        return int(m.group())
    for word, n in _ORDINALS.items():
        if re.search(rf"\b{word}\b", text):
            return n
    m = _WORD_NUMBER.search(text)
    return NUMBER_WORDS[m.group(1).lower()] if m else None


def normalise_value(slot: str, value: str) -> str:
    """The form values of one slot are compared in."""
    text = re.sub(r"\s+", " ", (value or "").replace("’", "'")).strip(" .,;:!?\"'()[]")
    text = _TRAILING.sub("", _LEADING.sub("", text)).strip(" .,;:!?\"'")
    if slot in NUMERIC_SLOTS:
        n = number_of(text)
        return str(n) if n is not None else text.lower()
    low = text.lower()
    if slot == "schedule":  # "four times a week" is "4 times a week"
        low = _COUNT_WORD.sub(lambda m: str(NUMBER_WORDS[m.group(1).lower()]), low)
    low = _TIME.sub(
        lambda m: (
            f"{int(m.group(1))}{(':' + m.group(2)) if m.group(2) and m.group(2) != '00' else ''}{m.group(3).lower()}m"
        ),
        low,
    )
    low = re.sub(
        r"\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday|morning|evening|afternoon|night|weekend)s\b",
        r"\1",
        low,
    )
    low = re.sub(r"\s*(?:,|\band\b|&)\s*", " ", low)
    return re.sub(r"\s+", " ", low).strip()


def same_value(a: str, b: str) -> bool:
    """Normalised values that denote the same thing: equal, or one's words all inside the other's."""
    if a == b:
        return True
    wa, wb = set(a.split()), set(b.split())
    if not wa or not wb or any(w.isdigit() for w in wa | wb):
        return False
    return wa <= wb or wb <= wa


def normalise_qualifier(qualifier: str) -> str:
    q = re.sub(r"[^\w' -]+", " ", (qualifier or "").lower())
    q = _LEADING.sub("", re.sub(r"\s+", " ", q).strip())
    return singular(q) if q else ""


def known_slot(slot: str) -> bool:
    return slot in SLOT_NAMES


def speaker_key(author: str, role: str) -> tuple[str, str]:
    """(subject key, label) of the person speaking: a named author by name, else the role."""
    name = (author or "").strip()
    if name and name.lower() not in ROLE_AUTHORS:
        return name.casefold(), name
    role = (role or "user").lower()
    return role, "the user" if role == "user" else f"the {role}"


def subject_key(subject: str, author: str, role: str) -> tuple[str, str]:
    """(key, label) of a claim's subject: "speaker" (or the author's own name) is the author; "speaker's
    sister" the author's sister; any other name that name."""
    own_key, own_label = speaker_key(author, role)
    raw = re.sub(r"\s+", " ", (subject or "").strip().strip(".,;:")) or SPEAKER
    low = raw.casefold()
    if low in (SPEAKER, "i", "me", "we", "us", "the speaker", "the user", "user", own_key, "myself"):
        return own_key, own_label
    for prefix in ("speaker's ", "the speaker's ", "my ", "the user's ", "user's ", f"{own_key}'s "):
        if low.startswith(prefix):
            relation = low[len(prefix) :].strip()
            return f"{own_key}'s {relation}", f"{own_label}'s {relation}"
    return low, raw

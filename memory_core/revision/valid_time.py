"""When a fact became true, as its own words say, resolved against the time they were said.

"I moved to Seattle last week" said on 15 July 2024 became true on 8 July; "since March" said in July is
1 March of that year; "next month" is the first of the next month. `stated_valid_from` returns the date the
first such expression points to, or None when the text says nothing about when (the claim is then valid
from the moment it was said). Numbers of the form "N days/weeks/months/years ago" and ISO dates count too.
"""

from __future__ import annotations

import re
from datetime import date, datetime, timedelta

from memory_core.ontology.titles import MONTHS

NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "a few": 3, "couple of": 2,
}  # fmt: skip
_MONTH = "(" + "|".join(MONTHS) + r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?"
_NUM = r"(\d+|a couple of|a few|couple of|" + "|".join(k for k in NUMBER_WORDS if " " not in k) + ")"
_UNIT = r"(day|week|month|year)s?"
_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("iso", re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")),
    ("ago", re.compile(rf"\b{_NUM} {_UNIT} ago\b", re.I)),
    ("in_n", re.compile(rf"\bin {_NUM} {_UNIT}\b", re.I)),
    ("last", re.compile(r"\b(last|this past|next|this coming) (week|weekend|month|year)\b", re.I)),
    ("day", re.compile(r"\b(yesterday|today|tonight|tomorrow|last night)\b", re.I)),
    (
        "month_day",
        re.compile(
            rf"\b(?:on |since |from |starting )?{_MONTH} (\d{{1,2}})(?:st|nd|rd|th)?(?:,? ((?:19|20)\d\d))?\b",
            re.I,
        ),
    ),
    (
        "day_month",
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?{_MONTH}(?:,? ((?:19|20)\d\d))?\b", re.I),
    ),
    (
        "month",
        re.compile(
            rf"\b(since|in|from|starting|back in|until|by|this|last|next) {_MONTH}(?:,? ((?:19|20)\d\d))?\b",
            re.I,
        ),
    ),
    ("year", re.compile(r"\b(since|in|from|back in) ((?:19|20)\d\d)\b", re.I)),
]


def _month_index(token: str) -> int:
    token = token.lower().rstrip(".")
    for i, name in enumerate(MONTHS):
        if name.startswith(token[:3]):
            return i + 1
    raise ValueError(token)


def _number(token: str) -> int:
    token = token.lower()
    return int(token) if token.isdigit() else NUMBER_WORDS.get(token, 1)


def _shift_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


def _month_near(month: int, year: str | None, ref: date, direction: str) -> date:
    """The month meant: the given year, else this year's, moved a year back when it lies ahead of the
    reference for a past expression ("since March" said in February means last March) or forward when it
    lies behind for a future one ("next March")."""
    if year:
        return date(int(year), month, 1)
    candidate = date(ref.year, month, 1)
    if direction == "past" and candidate > ref:
        return date(ref.year - 1, month, 1)
    if direction == "future" and candidate < date(ref.year, ref.month, 1):
        return date(ref.year + 1, month, 1)
    return candidate


def stated_valid_from(text: str, spoken_at: datetime, future: bool = False) -> date | None:
    """The date the first time expression of `text` points to, from `spoken_at`; None when there is none.
    `future`: the clause is about what will happen (a plan), so bare month names look forward."""
    ref = spoken_at.date()
    found = []
    for kind, pattern in _PATTERNS:
        m = pattern.search(text)
        if m:
            found.append((m.start(), kind, m))
    if not found:
        return None
    _, kind, m = min(found, key=lambda f: f[0])
    try:
        return _resolve(kind, m, ref, "future" if future else "past")
    except ValueError:  # "31 February": not a date
        return None


def _resolve(kind: str, m: re.Match, ref: date, direction: str) -> date | None:
    if kind == "iso":
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    if kind in ("ago", "in_n"):
        n, unit = _number(m.group(1)), m.group(2).lower()
        sign = -1 if kind == "ago" else 1
        if unit == "month":
            return _shift_months(ref, sign * n)
        if unit == "year":
            return date(ref.year + sign * n, 1, 1)
        return ref + timedelta(days=sign * n * (7 if unit == "week" else 1))
    if kind == "last":
        forward = m.group(1).lower() in ("next", "this coming")
        unit = m.group(2).lower()
        if unit in ("week", "weekend"):
            return ref + timedelta(days=7 if forward else -7)
        if unit == "month":
            return _shift_months(ref, 1 if forward else -1)
        return date(ref.year + (1 if forward else -1), 1, 1)
    if kind == "day":
        word = m.group(1).lower()
        return ref + timedelta(days={"yesterday": -1, "last night": -1, "tomorrow": 1}.get(word, 0))
    if kind == "month_day":
        month, day = _month_index(m.group(1)), int(m.group(2))
        base = _month_near(month, m.group(3), ref, direction)
        return date(base.year, month, day)
    if kind == "day_month":
        day, month = int(m.group(1)), _month_index(m.group(2))
        base = _month_near(month, m.group(3), ref, direction)
        return date(base.year, month, day)
    if kind == "month":
        word = m.group(1).lower()
        month = _month_index(m.group(2))
        if word == "next":
            direction = "future"
        elif word == "last":
            direction = "past"
        return _month_near(month, m.group(3), ref, direction)
    if kind == "year":
        return date(int(m.group(2)), 1, 1)
    return None

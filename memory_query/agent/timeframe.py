"""The time range a question implies, relative to the date it is asked ("last month", "in March", "two weeks
ago", "last Saturday", "in the past few months"), or anchored on an event the Scout must date first ("before
I moved", "since I started the new job").

Ranges are generous on purpose: the Scout searches inside a range first and still looks outside it, so a
range that is too wide costs a little precision and one that is too narrow would hide the evidence. A
question that asks for an amount of time ("how many weeks ago did I…") names no range: it asks for a measure.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

MONTHS = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
MONTHS.update({name.lower(): i for i, name in enumerate(calendar.month_abbr) if name})
MONTHS.pop("may", None)  # "may" is a verb far more often than a month: only "in May" / "May 2023" count
WEEKDAYS = {name.lower(): i for i, name in enumerate(calendar.day_name)}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
    "several": 3,
}  # fmt: skip
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBER = r"(\d+|" + "|".join(sorted((re.escape(k) for k in NUMBERS), key=len, reverse=True)) + r")"
_UNIT = r"(day|week|month|year)s?"
_MONTH = r"(" + "|".join(sorted([*MONTHS, "may"], key=len, reverse=True)) + r")\b\.?"


@dataclass(frozen=True)
class TimeRange:
    """[start, end] of message time to search first; `label` is the words it came from."""

    start: datetime | None
    end: datetime | None
    label: str

    def contains(self, when: datetime) -> bool:
        return (self.start is None or when >= self.start) and (self.end is None or when <= self.end)

    def widened(self, factor: float = 2.0) -> TimeRange:
        """The same range grown around its middle (a narrow range that found nothing)."""
        if self.start is None or self.end is None:
            return self
        half = (self.end - self.start) * (factor - 1) / 2
        return TimeRange(self.start - half, self.end + half, f"{self.label} (widened)")

    def as_dict(self) -> dict:
        return {
            "start": self.start.isoformat() if self.start else None,
            "end": self.end.isoformat() if self.end else None,
            "label": self.label,
        }


@dataclass(frozen=True)
class EventAnchor:
    """A range bounded by an event memory must date first: 'before I moved' → search 'I moved', then look
    before the date of what it finds."""

    event: str  # the words to search for the event
    relation: str  # before | after | since | until
    label: str

    def range_from(self, event_time: datetime, asked_at: datetime) -> TimeRange:
        if self.relation in ("before", "until"):
            return TimeRange(None, event_time, f"{self.label} ({event_time:%Y-%m-%d})")
        return TimeRange(event_time, asked_at, f"{self.label} ({event_time:%Y-%m-%d})")

    def as_dict(self) -> dict:
        return {"event": self.event, "relation": self.relation, "label": self.label}


def _number(text: str) -> int:
    return int(text) if text.isdigit() else NUMBERS[text.lower()]


def _day(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_start(year: int, month: int) -> datetime:
    while month < 1:
        year, month = year - 1, month + 12
    return datetime(year, month, 1)


def _month_range(year: int, month: int) -> tuple[datetime, datetime]:
    last = calendar.monthrange(year, month)[1]
    return datetime(year, month, 1), datetime(year, month, last, 23, 59, 59)


def _end_of(day: datetime) -> datetime:
    return _day(day) + timedelta(days=1) - timedelta(seconds=1)


def _ago(n: int, unit: str, asked_at: datetime, label: str) -> TimeRange:
    """'n units ago': around that point, with a tolerance that grows with the unit and the number (people
    round: "two weeks ago" is 10 to 18 days)."""
    days = n * UNIT_DAYS[unit]
    slack = {"day": max(1, n // 4), "week": 3 + n, "month": 10 + 3 * n, "year": 120}[unit]
    centre = _day(asked_at) - timedelta(days=days)
    return TimeRange(centre - timedelta(days=slack), _end_of(centre + timedelta(days=slack)), label)


def _past(n: int, unit: str, asked_at: datetime, label: str) -> TimeRange:
    return TimeRange(_day(asked_at) - timedelta(days=n * UNIT_DAYS[unit] + 2), _end_of(asked_at), label)


def _weekday(name: str, asked_at: datetime, label: str, strict_last: bool) -> TimeRange:
    """The most recent such weekday before the question's day ('last Saturday' asked on a Saturday is a week
    back). Said without 'last', a weekday may be talked about a few days ahead: the range reaches back."""
    back = (asked_at.weekday() - WEEKDAYS[name]) % 7 or 7
    target = _day(asked_at) - timedelta(days=back)
    start = target - timedelta(days=2 if strict_last else 10)
    return TimeRange(start, _end_of(min(target + timedelta(days=1), asked_at)), label)


def _named_month(month: int, year: int | None, asked_at: datetime, label: str) -> TimeRange:
    """'in March': that month of the given year, else the latest March not after the question."""
    if year is None:
        year = asked_at.year if month <= asked_at.month else asked_at.year - 1
    start, end = _month_range(year, month)
    return TimeRange(start, min(end, _end_of(asked_at)) if start <= asked_at else end, label)


_PATTERNS: list[tuple[re.Pattern, str]] = [
    (re.compile(rf"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+{_NUMBER}\s+{_UNIT}", re.I), "past_n"),
    (re.compile(rf"\b(?:the\s+)?(?:last|past)\s+{_NUMBER}\s+{_UNIT}", re.I), "past_n"),
    (re.compile(rf"\b(?:in|over|during|within)\s+the\s+(?:last|past)\s+{_UNIT}", re.I), "past_1"),
    (re.compile(rf"(?<!many )(?<!much )\b{_NUMBER}\s+{_UNIT}\s+ago\b", re.I), "ago"),
    (re.compile(r"\byesterday\b", re.I), "yesterday"),
    (re.compile(r"\b(?:earlier\s+)?today\b|\bthis\s+(?:morning|afternoon|evening)\b", re.I), "today"),
    (re.compile(r"\blast\s+(week|month|year)\b", re.I), "last_unit"),
    (re.compile(r"\bthis\s+(week|month|year)\b", re.I), "this_unit"),
    (re.compile(r"\blast\s+(" + "|".join(WEEKDAYS) + r")\b", re.I), "last_weekday"),
    (re.compile(r"\b(?:on|this\s+past)\s+(" + "|".join(WEEKDAYS) + r")\b", re.I), "weekday"),
    (re.compile(rf"\b(?:in|during|since|by|of|early|late|mid)[\s-]+{_MONTH}(?:\s*,?\s*(\d{{4}}))?", re.I), "month"),
    (re.compile(rf"\b{_MONTH}\s+(\d{{4}})\b", re.I), "month"),
    (re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d\d)\b", re.I), "year"),
    (re.compile(r"\b(?:recently|lately)\b", re.I), "recently"),
]  # fmt: skip


def _range_for(kind: str, m: re.Match, asked_at: datetime) -> TimeRange | None:
    label = m.group(0).strip()
    if kind == "past_n":
        return _past(_number(m.group(1)), m.group(2).lower(), asked_at, label)
    if kind == "past_1":
        return _past(1, m.group(1).lower(), asked_at, label)
    if kind == "ago":
        return _ago(_number(m.group(1)), m.group(2).lower(), asked_at, label)
    if kind == "yesterday":
        day = _day(asked_at) - timedelta(days=1)
        return TimeRange(day - timedelta(days=1), _end_of(asked_at), label)
    if kind == "today":
        return TimeRange(_day(asked_at), _end_of(asked_at), label)
    if kind == "last_unit":
        unit = m.group(1).lower()
        if unit == "month":  # the previous calendar month and the 30 days before the question alike
            start = _month_start(asked_at.year, asked_at.month - 1)
        elif unit == "week":
            start = _day(asked_at) - timedelta(days=asked_at.weekday() + 7)
        else:
            start = datetime(asked_at.year - 1, 1, 1)
        return TimeRange(start, _end_of(asked_at), label)
    if kind == "this_unit":
        unit = m.group(1).lower()
        start = {
            "week": _day(asked_at) - timedelta(days=asked_at.weekday()),
            "month": datetime(asked_at.year, asked_at.month, 1),
            "year": datetime(asked_at.year, 1, 1),
        }[unit]
        return TimeRange(start, _end_of(asked_at), label)
    if kind in ("last_weekday", "weekday"):
        return _weekday(m.group(1).lower(), asked_at, label, kind == "last_weekday")
    if kind == "month":
        name = m.group(1).lower().rstrip(".")
        month = MONTHS.get(name) or (5 if name == "may" else None)
        if month is None:
            return None
        year = int(m.group(2)) if m.lastindex and m.lastindex >= 2 and m.group(2) else None
        return _named_month(month, year, asked_at, label)
    if kind == "year":
        year = int(m.group(1))
        return TimeRange(datetime(year, 1, 1), datetime(year, 12, 31, 23, 59, 59), label)
    if kind == "recently":
        return _past(2, "month", asked_at, label)
    return None


_ANCHOR = re.compile(
    r"\b(before|after|since|until)\s+(I\s+(?!was\b|am\b|had\b)[a-z']+(?:\s+(?!and\b|or\b|but\b)[\w'-]+){0,5})",
    re.I,
)


def as_of_from_text(text: str | None) -> datetime | None:
    """A question's date from an ISO date or time; a bare date is the end of that day (all it holds)."""
    if not text:
        return None
    when = datetime.fromisoformat(text.strip()).replace(tzinfo=None)
    return _end_of(when) if len(text.strip()) <= 10 else when


def find_time_range(question: str, asked_at: datetime) -> TimeRange | None:
    """The range the question's own words set relative to `asked_at` (the first expression found), or None."""
    for pattern, kind in _PATTERNS:
        m = pattern.search(question)
        if m:
            found = _range_for(kind, m, asked_at)
            if found is not None:
                return found
    return None


def find_event_anchor(question: str) -> EventAnchor | None:
    """'before I moved to Lisbon' → the event 'I moved to Lisbon' to date first, and the side to look at."""
    m = _ANCHOR.search(question)
    if not m:
        return None
    event = m.group(2).rstrip("?.!, ")
    return EventAnchor(event, m.group(1).lower(), m.group(0).rstrip("?.!, "))


def strip_time_words(text: str) -> str:
    """The question without its time expressions (they would only add noise to a word search)."""
    out = text
    for pattern, _kind in _PATTERNS:
        out = pattern.sub(" ", out)
    return re.sub(r"\s+([?.!,])", r"\1", re.sub(r"\s+", " ", out)).strip(" ,")

"""When a fact was true, as its description says: the date interval an event concept is about.

The title contract puts the resolved date in a fact's description ("... yesterday (7 May 2023).", "... (the
week before 13 October 2023).", "... in May 2023", "on 2023-05-07"). The router only lets one event absorb
another when their times are compatible: two support-group visits a month apart are two events, however
alike their words. `described_interval` reads the first date expression of a description into a
[start, end] interval of days; None when it names no date.
"""

from __future__ import annotations

import calendar
import re
from datetime import date, datetime, timedelta

from memory_core.ontology.titles import MONTHS

_MONTH = "(" + "|".join(MONTHS) + ")"
_PATTERNS = [
    # (regex, kind); kind decides how the groups read
    (re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b"), "iso"),
    (
        re.compile(
            r"(the week before |the week after |the weekend of )?\b(\d{1,2})(?:st|nd|rd|th)? (?:of )?"
            + _MONTH
            + r",? ((?:19|20)\d\d)\b",
            re.I,
        ),
        "dmy",
    ),
    (re.compile(r"\b" + _MONTH + r" (\d{1,2})(?:st|nd|rd|th)?,? ((?:19|20)\d\d)\b", re.I), "mdy"),
    (re.compile(r"\b" + _MONTH + r",? ((?:19|20)\d\d)\b", re.I), "my"),
    (re.compile(r"(?:\(|\b(?:in|during|since|of|back in) )((?:19|20)\d\d)\b"), "y"),
]


def described_interval(description: str) -> tuple[date, date] | None:
    found = []
    for pattern, kind in _PATTERNS:
        m = pattern.search(description)
        if m:
            found.append((m.start(), kind, m))
    if not found:
        return None
    _, kind, m = min(found, key=lambda f: f[0])  # the earliest expression; on a tie the more precise pattern
    try:
        if kind == "iso":
            d = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            return d, d
        if kind == "dmy":
            d = date(int(m.group(4)), MONTHS.index(m.group(3).lower()) + 1, int(m.group(2)))
            relation = (m.group(1) or "").strip()
            if relation == "the week before":
                return d - timedelta(days=7), d
            if relation == "the week after":
                return d, d + timedelta(days=7)
            if relation == "the weekend of":
                return d, d + timedelta(days=1)
            return d, d
        if kind == "mdy":
            d = date(int(m.group(3)), MONTHS.index(m.group(1).lower()) + 1, int(m.group(2)))
            return d, d
        if kind == "my":
            year, month = int(m.group(2)), MONTHS.index(m.group(1).lower()) + 1
            return date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])
        year = int(m.group(1))
        return date(year, 1, 1), date(year, 12, 31)
    except ValueError:  # "31 February 2023": not a date, so no time to compare
        return None


def interval(
    description: str, first_seen: datetime, last_seen: datetime, window_days: float
) -> tuple[date, date]:
    """The described interval, else the time the fact was told, widened by `window_days` either side."""
    described = described_interval(description)
    if described is not None:
        return described
    pad = timedelta(days=window_days)
    return (first_seen - pad).date(), (last_seen + pad).date()


def compatible(a: tuple[date, date], b: tuple[date, date], tolerance_days: float = 0) -> bool:
    pad = timedelta(days=tolerance_days)
    return a[0] - pad <= b[1] and b[0] - pad <= a[1]

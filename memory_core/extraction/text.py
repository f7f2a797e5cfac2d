"""Plain-text machinery the offline teacher keeps beside the parse: sentence spans of texts it does not
parse (an assistant's long answers), quoted titles, the cleaning of a clause's edges, the third-person form of
a verb, and resolution of relative dates against the message's time.

Everything works on (start, end) offsets into the original message text, so whatever is cut out is a
verbatim substring by construction.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory_core.ontology.titles import WEEKDAYS

Span = tuple[int, int]

_ABBREVIATIONS = {
    "e.g",
    "i.e",
    "etc",
    "vs",
    "mr",
    "mrs",
    "ms",
    "dr",
    "st",
    "jr",
    "sr",
    "prof",
    "approx",
    "no",
    "fig",
}
_SENTENCE_END = re.compile(r"[.!?…]+[\"'”’)\]]*(?=\s)|\n+")
_QUOTED = re.compile(r"(?<![\w])['\"“‘]([^'\"“”‘’\n]{2,80})['\"”’](?![\w])")

LEADING_FILLERS = re.compile(  # used with .match(text, pos): anchored at pos without "^"
    r"(?:(?:and|but|so|because|since|while|although|though|also|plus|then|well|oh|oh no|ah|wow|yeah|yes|no|ok|okay|"
    r"honestly|actually|anyway|anyways|by the way|btw|hey|hi|hello|lol|haha|um|uh|hmm|ugh|sure|right|"
    r"in fact|to be honest|tbh|speaking of which|funny enough|(?:quick |small |big |an? )?update|news|fyi|ps)\b[\s,!.:;—–-]*)+",
    re.IGNORECASE,
)
_PAST_IRREGULAR = {
    "went", "got", "had", "did", "made", "took", "saw", "met", "came", "gave", "found", "left", "bought", "brought",
    "thought", "felt", "told", "said", "ran", "began", "wrote", "read", "spent", "sent", "kept", "won", "lost",
    "paid", "built", "taught", "caught", "fought", "sold", "held", "heard", "knew", "drove", "flew", "ate", "drank",
    "swam", "sang", "rode", "wore", "threw", "grew", "drew", "chose", "broke", "spoke", "woke", "became", "fell",
    "forgot", "hurt", "quit", "put", "set", "let", "cut", "hit", "shut", "was", "were", "sat", "stood", "slept",
    "understood", "led", "fed", "meant", "dealt", "lent", "shot", "stuck", "struck", "tore", "hung", "dug", "bit",
}  # fmt: skip
_MODALS = {"can", "could", "will", "would", "shall", "should", "may", "might", "must", "can't", "couldn't", "gotta",
           "gonna", "wanna", "used", "better",
           "won't", "wouldn't", "shouldn't", "mustn't", "didn't", "wasn't", "weren't", "hadn't", "ought"}  # fmt: skip
_THIRD_PERSON = {"am": "is", "'m": "is", "have": "has", "do": "does", "go": "goes", "be": "is", "don't": "doesn't",
                 "haven't": "hasn't", "are": "is", "aren't": "isn't", "'ve": "has", "'re": "is"}  # fmt: skip


def sentences(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentence spans inside text[start:end], trimmed of surrounding whitespace."""
    end = len(text) if end is None else end
    spans: list[Span] = []
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if m.group().startswith(".") and len(m.group()) == 1:
            word = re.search(r"([A-Za-z.]+)$", text[pos : m.start()])
            if word and word.group(1).lower().rstrip(".") in _ABBREVIATIONS:
                continue
            if m.end() < end and text[m.end() : m.end() + 2].strip()[:1].islower():
                continue  # "e.g. foo", "approx. 3": not a boundary
        spans.append((pos, m.end()))
        pos = m.end()
    if pos < end:
        spans.append((pos, end))
    return [s for s in (trim(text, a, b) for a, b in spans) if s[1] > s[0]]


def trim(text: str, start: int, end: int, chars: str = " \t\r\n") -> Span:
    while start < end and text[start] in chars:
        start += 1
    while end > start and text[end - 1] in chars:
        end -= 1
    return start, end


def protected_ranges(text: str, start: int, end: int) -> list[Span]:
    """Quoted titles: never cut inside them."""
    return [(m.start(), m.end()) for m in _QUOTED.finditer(text, start, end)]


def _is_past(word: str) -> bool:
    w = word.lower()
    return w in _PAST_IRREGULAR or (w.endswith("ed") and len(w) > 4)


_FRAME = re.compile(
    r"(?:one thing (?:i|we) (?:know|learned|love|noticed|realized)(?: for sure)? is(?: that)?|the (?:thing|truth|point) "
    r"is(?: that)?|you know,?|what i (?:mean|love|know) is(?: that)?)\s+",
    re.IGNORECASE,
)


def clean_clause(text: str, start: int, end: int) -> Span:
    """Drop leading fillers ("By the way, honestly, ...") and frames ("One thing I know is that ..."), and
    trailing punctuation."""
    m = LEADING_FILLERS.match(text, start, end)
    if m and m.end() < end:
        start = m.end()
    m = _FRAME.match(text, start, end)
    if m and m.end() < end:
        start = m.end()
    start, stop = trim(text, start, end, " \t\r\n,;:.!?—–-\"'“”*")
    for opening, closing in (("'", "'"), ('"', '"'), ("“", "”"), ("‘", "’")):
        inner = text[start:stop]
        if (
            stop < end
            and text[stop] == closing
            and re.search(rf"(?:^|\s){opening}\w", inner)
            and (inner.count(closing) if opening != closing else inner.count(opening) % 2) in (0, 1)
        ):
            stop += 1  # a quoted title at the end keeps its closing quote ("we discussed 'Emma'")
            break
    return start, stop


def third_person_verb(word: str) -> str:
    low = word.lower()
    if low in _THIRD_PERSON:
        return _THIRD_PERSON[low]
    if low in _MODALS or _is_past(low) or low.endswith("s") and not low.endswith("ss") or "'" in low:
        return word
    if re.search(r"(sh|ch|x|z|ss|o)$", low):
        return word + "es"
    if re.search(r"[^aeiou]y$", low):
        return word[:-1] + "ies"
    return word + "s"


# ------------------------------------------------------------------------------------- dates
def _fmt(d: datetime) -> str:
    return f"{d.day} {d.strftime('%B %Y')}"


def _last_weekday(ref: datetime, weekday: int) -> datetime:
    delta = (ref.weekday() - weekday) % 7 or 7
    return ref - timedelta(days=delta)


def _next_weekday(ref: datetime, weekday: int) -> datetime:
    delta = (weekday - ref.weekday()) % 7 or 7
    return ref + timedelta(days=delta)


def _shift_month(ref: datetime, months: int) -> datetime:
    m = ref.month - 1 + months
    return ref.replace(year=ref.year + m // 12, month=m % 12 + 1, day=1)


_UNITS = {"day": 1, "days": 1, "week": 7, "weeks": 7}
_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
            "eight": 8, "nine": 9, "ten": 10, "a couple of": 2, "a few": 3, "couple": 2, "few": 3}  # fmt: skip
_RELATIVE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|last night|this (?:morning|afternoon|evening)|"
    r"(?:last|next|this past|this coming) (?:week|weekend|month|year|"
    + "|".join(WEEKDAYS)
    + r")|(?:on )?(?:"
    + "|".join(WEEKDAYS)
    + r")|(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few) "
    r"(days?|weeks?|months?|years?) ago)\b",
    re.IGNORECASE,
)


def resolve_relative_date(text: str, ref: datetime, future: bool = False) -> str | None:
    """The calendar date a relative expression in `text` points to, from the message time `ref`."""
    m = _RELATIVE.search(text)
    if not m:
        return None
    expr = m.group(1).lower()
    if expr in ("yesterday", "last night"):
        return _fmt(ref - timedelta(days=1))
    if (
        expr in ("today", "tonight")
        or expr.startswith("this morning")
        or expr.startswith("this after")
        or expr.startswith("this even")
    ):
        return _fmt(ref)
    if expr == "tomorrow":
        return _fmt(ref + timedelta(days=1))
    if m.group(2):
        n = int(m.group(2)) if m.group(2).isdigit() else _NUMBERS.get(m.group(2).lower(), 1)
        unit = m.group(3).lower()
        if unit.startswith("month"):
            return _shift_month(ref, -n).strftime("%B %Y")
        if unit.startswith("year"):
            return str(ref.year - n)
        return _fmt(ref - timedelta(days=n * _UNITS[unit]))
    parts = expr.split()
    if parts[0] == "on" or (len(parts) == 1 and parts[0] in WEEKDAYS):
        day = WEEKDAYS.index(parts[-1])
        return _fmt(_next_weekday(ref, day) if future else _last_weekday(ref, day))
    forward = parts[0] in ("next", "this") and parts[1] == "coming" or parts[0] == "next"
    unit = parts[-1]
    if unit in WEEKDAYS:
        day = WEEKDAYS.index(unit)
        return _fmt(_next_weekday(ref, day) if forward else _last_weekday(ref, day))
    if unit == "week":
        return f"the week {'after' if forward else 'before'} {_fmt(ref)}"
    if unit == "weekend":
        sat = _next_weekday(ref, 5) if forward else _last_weekday(ref, 5)
        return f"the weekend of {_fmt(sat)}"
    if unit == "month":
        return _shift_month(ref, 1 if forward else -1).strftime("%B %Y")
    if unit == "year":
        return str(ref.year + (1 if forward else -1))
    return None

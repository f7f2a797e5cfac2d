"""The offline Planner's rules: a question → a `Plan` (intent, sub-questions, time range, event anchor).

- comparisons are decomposed into their parts, each searched on its own, so both sides reach the evidence
  ("which did I do first, A or B?" → A, B; "how many days between A and B" → A, B; "how many months before A
  did B" → A, B); a part too short to search alone borrows the question's other words;
- counts and totals become a collection over sessions ("how many X", "how much … in total");
- several questions in one are split ("where did I go, and what did I buy there?");
- the time range is read relative to the question's date (`memory_query.agent.timeframe`).

Revision (`observe`) is where the Planner keeps state: the entry concepts and topics the searches reached,
the anchor's date once found, and which strategies failed.
"""

from __future__ import annotations

import re
from datetime import datetime

from memory_core.lexical import tokenize
from memory_query.agent.plan import Plan, SubQuestion
from memory_query.agent.timeframe import find_event_anchor, find_time_range, strip_time_words

# question scaffolding: words that say what kind of answer is wanted, not what it is about
GENERIC_WORDS = """how many much long ago first last earlier later sooner recently ever total times time day days
week weeks month months year years remind remember mention mentioned tell told previous conversation chat talk
talked said say discuss discussed again currently now also exactly approximately approximate roughly happen
happened kind type thing things something one ones which what when where who whose whom why did do does done
order chronological earliest latest""".split()
GENERIC = frozenset(tokenize(" ".join(GENERIC_WORDS)))

_ORDER_WORDS = (
    r"first|earlier|earliest|sooner|before|later|latest|last|more recently|most recently|more|less|most|least"
)
# "Which X did I Y first[ in Feb], A or B?" — the stem, the order word, and the alternatives after the comma
_WHICH_ALTERNATIVES = re.compile(
    rf"^\s*(?P<stem>(?:which|what|who)\b.*?)(?:\b(?P<order>{_ORDER_WORDS})\b(?P<rest>[^,:]*))?[,:]\s*"
    r"(?P<a>[^,:?]+?)\s*,?\s+or\s+(?P<b>[^?]+?)\s*\??\s*$",
    re.I,
)
# "Did I A before B?" / "Did A happen after B?"
_DID_BEFORE = re.compile(
    r"^\s*(?:did|was|were|had|have)\s+(?P<a>.+?)\s+(?P<order>before|after|earlier than|later than)\s+(?P<b>.+?)\s*\??\s*$",
    re.I,
)
# "How many days passed between A and B?" / "… between when I A and when I B"
_BETWEEN = re.compile(r"\bbetween\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*\??\s*$", re.I)
# "How many months before my anniversary did Rachel get engaged?" / "How long after A did I B?"
_MEASURE_RELATIVE = re.compile(
    r"^\s*how\s+(?:many\s+(?P<unit>days|weeks|months|years|hours)|long)\s+(?P<order>before|after)\s+"
    r"(?P<a>.+?)\s+(?P<b>(?:did|was|were|had|have|do)\s+.+?)\s*\??\s*$",
    re.I,
)
_HOW_OLD = re.compile(r"^\s*how\s+old\s+(?:was|were|am)\s+I\s+when\s+(?P<a>.+?)\s*\??\s*$", re.I)
_MEASURE_AGO = re.compile(
    r"\bhow\s+(?:many\s+(?P<unit>days|weeks|months|years|hours)|long)\s+(?:ago|has it been|have passed|had passed|passed|since)\b",
    re.I,
)
_COUNT = re.compile(
    r"^\s*(?:how\s+many\b(?!\s+(?:days|weeks|months|years|hours|minutes)\s+(?:ago|before|after|between|passed|since|have|had|did|was|were|until))"
    r"|how\s+much\b.*\b(?:total|in all|altogether|combined|so far|spent|spend|made|earn|earned|saved|raised|paid)\b"
    r"|how\s+often\b|what\s+(?:are|were)\s+all\b|list\b|name\s+all\b)"
    r"|\b(?:in\s+total|total\s+(?:amount|number|cost)|combined|altogether|all\s+the\s+\w+\s+I\b|"
    r"in\s+(?:chronological\s+)?order|order\s+of\b|from\s+(?:the\s+)?earliest|from\s+(?:the\s+)?first)",
    re.I,
)
_HOW_MANY_OBJECT = re.compile(
    r"\bhow\s+many\s+(?P<obj>.+?)\s+(?:have|has|had|did|do|does|am|was|were|are|is|will|can|could|I)\b", re.I
)
_SECOND_QUESTION = re.compile(
    r"(?:[,;]\s*(?:and|also|plus)\s+|\s+and\s+(?:also\s+)?)(?=(?:what|when|where|who|which|why|how|did|do|is|was)\b)",
    re.I,
)
_LEADING = re.compile(r"^(?:the|a|an|my|our|that|this|to)\s+", re.I)


def content_tokens(text: str) -> list[str]:
    """The stemmed words of `text` that say what it is about (question scaffolding removed)."""
    return [t for t in tokenize(text) if t not in GENERIC]


def _clean(part: str) -> str:
    part = re.sub(r"\s+", " ", part).strip(" ,.?!;:")
    part = re.sub(r"^(?:the day|the time|when)\s+", "", part, flags=re.I)
    return part


def _with_context(part: str, context: str) -> str:
    """A part that is too short to search alone ("the bike") borrows the question's other words."""
    if len(content_tokens(part)) >= 3:
        return part
    extra = [
        w for w in re.findall(r"[A-Za-z0-9'\-]+", context) if tokenize(w) and tokenize(w)[0] not in GENERIC
    ]
    words = [w for w in extra if w.lower() not in part.lower().split()]
    return f"{part} {' '.join(words)}".strip() if words else part


def split_parts(question: str) -> list[str]:
    """Several questions in one: sentences ending in '?', or a second wh-clause after 'and'."""
    sentences = [s.strip() for s in re.split(r"(?<=\?)\s+", question.strip()) if s.strip()]
    if len(sentences) > 1:
        return sentences
    parts = [p.strip(" ,;") for p in _SECOND_QUESTION.split(question) if p.strip(" ,;")]
    return parts if len(parts) > 1 and all(len(content_tokens(p)) >= 1 for p in parts) else [question]


def _comparison(question: str) -> tuple[list[str], str | None, str | None] | None:
    """(parts, order, measure) of a comparison, or None."""
    m = _MEASURE_RELATIVE.match(question)
    if m:
        unit = (m.group("unit") or "days").lower()
        b = _clean(re.sub(r"^(?:did|was|were|had|have|do)\s+", "", m.group("b")))
        return [_clean(m.group("a")), b], None, unit
    m = _BETWEEN.search(question)
    if m and re.search(r"\bhow\s+(?:many|long|much\s+time)\b", question, re.I):
        unit = re.search(r"\bhow\s+many\s+(days|weeks|months|years|hours)\b", question, re.I)
        return (
            [_clean(m.group("a")), _clean(m.group("b"))],
            "first",
            (unit.group(1).lower() if unit else "days"),
        )
    m = _HOW_OLD.match(question)
    if m:
        return [_clean(m.group("a")), "my age, years old, birthday"], None, "age"
    m = _WHICH_ALTERNATIVES.match(question)
    if m:
        stem = f"{m.group('stem')} {m.group('rest') or ''}"
        parts = [
            _with_context(_clean(_LEADING.sub("", p.strip())), stem) for p in (m.group("a"), m.group("b"))
        ]
        order = (m.group("order") or "").lower() or None
        if order in ("first", "earlier", "earliest", "sooner", "before"):
            order = "first"
        elif order in ("later", "latest", "last", "more recently", "most recently"):
            order = "last"
        return parts, order, None
    m = _DID_BEFORE.match(question)
    if m:
        order = "first" if m.group("order").lower() in ("before", "earlier than") else "last"
        return [_clean(m.group("a")), _clean(m.group("b"))], order, None
    return None


def _count_items(question: str) -> str | None:
    """What a "how many X" question counts, when it is specific enough to search alone ("model kits", not
    "trips" or "hours")."""
    m = _HOW_MANY_OBJECT.search(question)
    if not m:
        return None
    obj = re.sub(r"\s+(?:that|which|who|in total)$", "", m.group("obj").strip(), flags=re.I)
    if re.match(r"(?:days|weeks|months|years|hours|minutes|times)\b", obj, re.I):
        return None
    n = len(content_tokens(obj))
    return obj if 2 <= n < len(content_tokens(question)) else None


def _measure(question: str) -> str | None:
    m = _MEASURE_AGO.search(question)
    if not m:
        return None
    return (m.group("unit") or "days").lower()


def make_plan(question: str, asked_at: datetime) -> Plan:
    """The first plan for `question` asked at `asked_at` (rules only; no memory read yet)."""
    searchable = strip_time_words(question) or question
    time_range = find_time_range(question, asked_at)
    comparison = _comparison(searchable)
    if comparison is not None:
        parts, order, measure = comparison
        labels = [chr(ord("A") + i) for i in range(len(parts))]
        plan = Plan(question, asked_at, "comparison", [SubQuestion(p, lab) for p, lab in zip(parts, labels, strict=True)])  # fmt: skip
        plan.subs.append(SubQuestion(searchable, "whole question", answered=False))
        plan.order, plan.measure = order, measure
        plan.notes.append(
            f"a comparison: {len(parts)} parts searched apart, each kept, and the whole question"
        )
    elif _COUNT.search(searchable) or _COUNT.search(question):  # "In March, how many …": time words first
        subs = [SubQuestion(searchable, "main")]
        items = _count_items(searchable)
        if items:
            subs.append(SubQuestion(items, "items"))
        plan = Plan(question, asked_at, "count", subs)
        plan.notes.append(
            "a collection over sessions: the best evidence of each conversation, not the top of one"
        )
    else:
        parts = split_parts(searchable)
        if len(parts) > 1:
            subs = [SubQuestion(p, f"part {i + 1}") for i, p in enumerate(parts)]
            plan = Plan(question, asked_at, "multi_part", subs)
            plan.notes.append(f"{len(parts)} questions in one, answered each")
        else:
            plan = Plan(question, asked_at, "lookup", [SubQuestion(searchable, "main")])
        plan.measure = _measure(question)
    plan.time_range = time_range
    if comparison is None:
        plan.anchor = find_event_anchor(question)
        if plan.anchor is not None:  # the event is searched on its own; the rest of the question without it
            for sub in plan.subs:
                sub.text = re.sub(r"\s+([?.!,])", r"\1", sub.text.replace(plan.anchor.label, " ")).strip()
    if plan.time_range is not None:
        plan.notes.append(f"time range {plan.time_range.label!r} read against {asked_at:%Y-%m-%d}")
    if plan.anchor is not None:
        plan.notes.append(f"an event to date first: {plan.anchor.event!r} ({plan.anchor.relation})")
    return plan

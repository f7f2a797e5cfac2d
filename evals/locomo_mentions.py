"""A stand-in mention set for benchmarking the memory loop before the Semantic Mapper lands.

NOT the product's teacher: a handful of regular expressions over each message (capitalised names →
entity, "I love/enjoy …ing" → behavioral_pattern, "I'm planning/going/trying to …" → goal, "went to /
attended / joined a …" → event, "I think/believe …" → belief, "my …" → entity). Each candidate gets a
verbatim span in its message, the sentence it came from as its description, and a pattern-dependent
confidence, and is written to `mentions` exactly as the mapper's contract defines the table, so the loop
runs on it unchanged. Deterministic.
"""

from __future__ import annotations

import re
from datetime import datetime

from sqlalchemy import insert, select

from memory_core.ids import stable_uuid
from memory_core.store.db import CorpusStore
from memory_core.store.schema import mentions, messages, segments

EXTRACTOR = "bench-regex-v1"
_SENT = re.compile(r"[^.!?\n]+[.!?]?")
_NOT_NAMES = frozenset(
    "I Hey Hi Hello Wow Thanks Thank Yes No Yeah Oh Sure Great Good Nice Awesome Cool So And But Or That This "
    "It It's I'm I've I'd I'll What How Why When Where Who Which Do Did Does Are Is Was Were Have Has Had Can "
    "Could Would Should Will Just Really Totally Definitely Absolutely Sounds Glad Sorry Congrats "
    "Congratulations Me My You Your We Our They Their He She His Her Haha Aw Aww Ah Well Also Plus Not "
    "Love Keep Take Let Let's Bye See Talk Catch Amazing Lol Omg Ok Okay Anyway By The A An If".split()
)
PATTERNS: list[tuple[str, re.Pattern, float]] = [
    (
        "behavioral_pattern",
        re.compile(
            r"\bI (?:really |also |just |still )?(?:love|enjoy|like|adore|am into|'m into|practice) ((?:\w+)(?: \w+){0,2})",
            re.I,
        ),
        0.7,
    ),
    ("behavioral_pattern", re.compile(r"\bI(?:'ve| have) been ((?:\w+ing)(?: \w+){0,2})", re.I), 0.6),
    (
        "behavioral_pattern",
        re.compile(r"\bI (?:usually|always|often|regularly) ((?:\w+)(?: \w+){0,2})", re.I),
        0.65,
    ),
    (
        "goal",
        re.compile(
            r"\b(?:I'm|I am|I've been) (?:planning|going|hoping|trying|thinking about|working) (?:to|on) ((?:\w+)(?: \w+){0,3})",
            re.I,
        ),
        0.75,
    ),
    ("goal", re.compile(r"\bI (?:want|plan|hope|need) to ((?:\w+)(?: \w+){0,3})", re.I), 0.65),
    (
        "event",
        re.compile(
            r"\b(?:went to|attended|joined|visited|took part in) (?:a |an |the |my )?((?:\w+)(?: \w+){0,3})",
            re.I,
        ),
        0.8,
    ),
    ("belief", re.compile(r"\bI (?:think|believe|feel like|feel that) ((?:\w+)(?: \w+){2,5})", re.I), 0.5),
    ("entity", re.compile(r"\bmy (\w+(?: \w+)?)", re.I), 0.55),
]
_NAME = re.compile(r"\b([A-Z][a-zA-Z]+(?: [A-Z][a-zA-Z]+){0,3})\b")
# a name only addressed ("Thanks, Caroline!") is not a mention of a concept
_VOCATIVE = re.compile(r"(?:^|, |Hey |Hi |Hello |Thanks,? |Thank you,? |Wow,? )$")
_TRAILING = frozenset("a an the and or but to of in on at for with so is was it that this my your".split())


def _trim(phrase: str) -> str:
    words = phrase.split()
    while words and words[-1].lower() in _TRAILING:
        words.pop()
    return " ".join(words)


def extract(text: str, speaker: str) -> list[tuple[str, int, int, str, str, float]]:
    """(type, start, end, title, description, confidence) candidates of one message."""
    out = []
    for sent in _SENT.finditer(text):
        sentence = sent.group(0).strip()
        opening = sent.start() + len(sent.group(0)) - len(sent.group(0).lstrip())
        description = f"{speaker}: {sentence}"[:220]
        for type_, pattern, conf in PATTERNS:
            for m in pattern.finditer(text, sent.start(), sent.end()):
                title = _trim(m.group(1))
                if len(title) < 3:
                    continue
                start = m.start(1)
                out.append((type_, start, start + len(title), title, description, conf))
        for m in _NAME.finditer(text, sent.start(), sent.end()):
            words = [w for w in m.group(1).split() if w not in _NOT_NAMES]
            if not words or (len(words) == 1 and (m.start(1) == opening or words[0].endswith("ing"))):
                continue  # one capitalised word opening a sentence is sentence case, not a name
            if (
                len(words) == 1
                and _VOCATIVE.search(text[opening : m.start(1)])
                and text[m.end(1) : m.end(1) + 1] in "!,.?"
            ):
                continue
            name = " ".join(words)
            start = text.find(name, m.start(1), m.end(1))
            if start < 0:
                continue
            out.append(
                ("entity", start, start + len(name), name, description, 0.6 if len(words) == 1 else 0.8)
            )
    return out


def generate_mentions(store: CorpusStore, jitter: bool = True) -> int:
    """Write the generated candidates of every message of the corpus to `mentions`; returns the count."""
    with store.staging.connect() as conn:
        seg_of: dict[str, str] = {}
        for seg in conn.execute(
            select(segments.c.segment_id, segments.c.message_ids).where(segments.c.superseded_at.is_(None))
        ):
            for mid in seg.message_ids:
                seg_of.setdefault(mid, seg.segment_id)
    rows = []
    seen = set()
    with store.source.connect() as conn:
        for msg in conn.execute(
            select(
                messages.c.message_id,
                messages.c.conversation_id,
                messages.c.author,
                messages.c.text,
                messages.c.created_at,
            )
        ):
            if msg.message_id not in seg_of:
                continue
            for type_, start, end, title, description, conf in extract(msg.text, msg.author):
                mention_id = stable_uuid("bench-mention", msg.message_id, type_, start, end)
                if mention_id in seen:
                    continue
                seen.add(mention_id)
                if jitter:  # deterministic spread so confidences are not all equal
                    conf = round(min(0.95, max(0.3, conf + (int(mention_id[:2], 16) / 255 - 0.5) * 0.3)), 3)
                rows.append(
                    dict(
                        mention_id=mention_id,
                        segment_id=seg_of[msg.message_id],
                        message_id=msg.message_id,
                        conversation_id=msg.conversation_id,
                        span_start=start,
                        span_end=end,
                        surface=msg.text[start:end],
                        title=title,
                        type=type_,
                        description=description,
                        aliases=[],
                        relations=[],
                        confidence=conf,
                        consolidated_id=None,
                        extractor=EXTRACTOR,
                        extracted_at=datetime(2024, 1, 1),
                        message_created_at=msg.created_at,
                    )
                )
    with store.staging.begin() as conn:
        for i in range(0, len(rows), 1000):
            conn.execute(insert(mentions), rows[i : i + 1000])
    return len(rows)

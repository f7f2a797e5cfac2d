"""Where claims are read: the spans of fact-bearing mentions (their teacher's claims), and, for the offline
path, the people's messages themselves read by the slot rules.

The offline teacher makes concepts of first-person statements; a fact told inside a question ("reminders
for my gym sessions, which I usually go to at 7:00 pm on Mondays?") or in a clause it classifies as nothing
is not among them, yet it is a claim with a verbatim span. `scan_messages` reads every sentence of every
person's message in a current segment with the offline slot rules (for a question, only its fact-bearing
tail: "my … , which …", "since I …", "because I …"), skipping the messages an LLM teacher answered (its claims
are the teacher's). A span read this way is linked to the concept of the mention it overlaps, if any.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from memory_core.revision.slot_rules import SLOT_RULES_VERSION, offline_claims
from memory_core.store.db import CorpusStore
from memory_core.store.schema import conversations, mentions, messages, segment_extractions, segments

SCAN_EXTRACTOR = f"{SLOT_RULES_VERSION}:scan"
# whose messages state their own facts, by source format (as the extraction stage's teacher inputs say)
PERSON_ROLES_BY_FORMAT = {"locomo": {"user", "assistant"}}
_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
# the part of a question that states a fact: "my gym sessions, which I usually go to at 7 pm", "since I …"
_QUESTION_TAIL = re.compile(
    r"\b(?:my|our)\s+(?:[\w'-]+\s+){0,4}?[\w'-]+,?\s+which\b|\b(?:since|because|as) I\b", re.I
)
_FIRST_PERSON = re.compile(r"\b(?:I|my|we|our|me)\b|\bI'", re.I)
_CHUNK = 500


@dataclass(frozen=True)
class ReadSpan:
    """A span claims were read in: a mention's (its teacher's claims) or one the slot rules read."""

    key: str  # the mention id, or "scan:<message>:<start>:<end>"
    mention_id: str | None
    segment_id: str
    message_id: str
    conversation_id: str
    span_start: int
    span_end: int
    surface: str
    concept_id: str
    extractor: str
    spoken_at: datetime
    claims: tuple[dict, ...]

    @classmethod
    def of_mention(cls, r) -> ReadSpan:
        return cls(r.mention_id, r.mention_id, r.segment_id, r.message_id, r.conversation_id, r.span_start,
                   r.span_end, r.surface, r.consolidated_id or "", r.extractor, r.message_created_at,
                   tuple(r.claims or ()))  # fmt: skip


def fact_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of a message that may state a fact (a question: its fact-bearing tail only)."""
    out = []
    for m in _SENTENCE.finditer(text):
        start, end = m.start(), m.end()
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1] in " \t?!.":
            end -= 1
        if end - start < 8 or not _FIRST_PERSON.search(text, start, end):
            continue
        if text[m.end() - 1 : m.end()] == "?":
            tail = _QUESTION_TAIL.search(text, start, end)
            if tail is None:
                continue
            start = tail.start()
        out.append((start, end))
    return out


def _person(role: str, source_format: str) -> bool:
    return role in PERSON_ROLES_BY_FORMAT.get(source_format, {"user"})


def scan_messages(store: CorpusStore) -> list[ReadSpan]:
    """The spans of people's messages (in current segments, not answered by an LLM teacher) the slot rules
    read claims in."""
    pieces: dict[str, list[tuple[str, int, int]]] = {}
    with store.staging.connect() as conn:
        for seg_id, spans in conn.execute(
            select(segments.c.segment_id, segments.c.message_spans).where(segments.c.superseded_at.is_(None))
        ):
            for p in spans or []:
                pieces.setdefault(p["message_id"], []).append((seg_id, p["start"], p["end"]))
        linked: dict[str, list[tuple[int, int, str]]] = {}
        for r in conn.execute(
            select(mentions.c.message_id, mentions.c.span_start, mentions.c.span_end, mentions.c.consolidated_id)
            .where(mentions.c.consolidated_id.is_not(None))
        ):  # fmt: skip
            linked.setdefault(r.message_id, []).append((r.span_start, r.span_end, r.consolidated_id))
        by_llm = set(
            conn.execute(
                select(segment_extractions.c.segment_id).where(
                    ~segment_extractions.c.extractor.startswith("offline")
                )
            ).scalars()
        )
    wanted = sorted(m for m, ps in pieces.items() if not any(seg in by_llm for seg, _, _ in ps))
    out: list[ReadSpan] = []
    with store.source.connect() as conn:
        formats = dict(
            conn.execute(select(conversations.c.conversation_id, conversations.c.source_format)).all()
        )
        for i in range(0, len(wanted), _CHUNK):
            for m in conn.execute(
                select(messages.c.message_id, messages.c.conversation_id, messages.c.role, messages.c.text,
                       messages.c.created_at, messages.c.attributes)
                .where(messages.c.message_id.in_(wanted[i : i + _CHUNK]))
            ):  # fmt: skip
                if (m.attributes or {}).get("removed_from_source") or not _person(
                    m.role, formats.get(m.conversation_id, "")
                ):
                    continue
                out += _read(m, pieces[m.message_id], linked.get(m.message_id, []))
    return out


def _read(m, pieces: list[tuple[str, int, int]], linked: list[tuple[int, int, str]]) -> list[ReadSpan]:
    out = []
    for start, end in fact_spans(m.text):
        segment = next((seg for seg, a, b in pieces if a <= start and end <= b), None)
        if segment is None:
            continue  # a sentence cut across two segments: read by neither
        found = offline_claims("belief", m.text[start:end], m.created_at)
        if not found:
            continue
        overlap = [(min(end, b) - max(start, a), cid) for a, b, cid in linked if a < end and start < b]
        concept = max(overlap)[1] if overlap else ""
        out.append(
            ReadSpan(
                f"scan:{m.message_id}:{start}:{end}",
                None,
                segment,
                m.message_id,
                m.conversation_id,
                start,
                end,
                m.text[start:end],
                concept,
                SCAN_EXTRACTOR,
                m.created_at,
                tuple(c.model_dump() for c in found),
            )  # fmt: skip
        )
    return out

"""The Semantic Mapper: turns a teacher's schema-valid answer into verified, normalised rows.

Schema validity is not truth. For every candidate the mapper
- resolves the message handle (unknown handle → rejected),
- verifies each evidence quote against the message text: exact at the given offsets; else the occurrence
  nearest the offsets (offsets fixed); else after trimming punctuation/whitespace; else a match that ignores
  case, runs of whitespace and typographic quotes, mapped back to the original characters; a quote found
  only outside this segment's piece of the message, or nowhere, is rejected. The stored surface is always
  `message.text[span_start:span_end]`, so it is verbatim by construction;
- normalises title and aliases (whitespace, surrounding punctuation, length; duplicates dropped; a fact's
  title to its short canonical form per the contract in `memory_core/ontology/concepts.py`) and drops
  schema-valid nonsense (empty or placeholder titles, candidates without a verified span);
- verifies reactions: the evidence message must be a person's, the cue verbatim in it.
Every rejection is a residual row with a reason code, a sentence and the offending payload.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.extraction.teacher import MessageView, SegmentInput
from memory_core.ids import stable_uuid
from memory_core.ontology.concepts import FACT_TYPES
from memory_core.ontology.extraction import ConceptCandidate, ReactionCandidate, SegmentExtraction
from memory_core.ontology.titles import fact_title

STAGE = "extraction"
MAX_TITLE_CHARS = 120
MAX_ALIASES = 8
_PLACEHOLDER_TITLES = {"", "n/a", "na", "none", "null", "unknown", "untitled", "user", "assistant", "the user",
                       "concept", "entity", "thing", "something", "it", "this", "that"}  # fmt: skip
_TYPO = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-", "\u00a0": " "})


@dataclass
class MappedSegment:
    mentions: list[dict] = field(default_factory=list)
    reactions: list[dict] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)


def normalise_title(text: str, concept_type: str = "") -> str:
    """Whitespace, surrounding punctuation and length; a fact's title is cut to its canonical short form
    (`fact_title`: no dates, no truncation marks, about eight words), per the title contract."""
    if concept_type in FACT_TYPES:
        short = fact_title(text or "")
        if short:
            text = short
    text = unicodedata.normalize("NFC", text or "")
    text = re.sub(r"\s+", " ", text).strip()
    text = text.strip(" \"'“”‘’`*_.,;:!?()[]{}<>-–—")
    if len(text) > MAX_TITLE_CHARS:
        cut = text[:MAX_TITLE_CHARS].rsplit(" ", 1)[0]
        text = (cut or text[:MAX_TITLE_CHARS]).rstrip(" ,;:") + "…"
    return text


def _normalised_with_index(text: str) -> tuple[str, list[int]]:
    """Lower-cased, whitespace-collapsed, typographic-quote-free text, and for each char its source index."""
    out: list[str] = []
    index: list[int] = []
    prev_space = False
    for i, ch in enumerate(text.translate(_TYPO)):
        if ch.isspace():
            if prev_space:
                continue
            ch, prev_space = " ", True
        else:
            prev_space = False
        out.append(ch.lower())
        index.append(i)
    return "".join(out), index


def locate(m: MessageView, quote: str, hint_start: int) -> tuple[int, int, str] | tuple[None, None, str]:
    """(start, end, how) of `quote` in the message piece, or (None, None, reason code)."""
    text, lo, hi = m.text, m.start, m.end
    if not quote or not quote.strip():
        return None, None, "empty_span"
    hint = lo + max(0, hint_start)
    if text[hint : hint + len(quote)] == quote and hint + len(quote) <= hi:
        return hint, hint + len(quote), "exact"
    for candidate, how in ((quote, "offset_fixed"), (quote.strip(" \t\n\"'“”‘’.,;:!?…"), "trimmed")):
        if not candidate:
            continue
        found = [i.start() for i in re.finditer(re.escape(candidate), text)]
        inside = [i for i in found if lo <= i and i + len(candidate) <= hi]
        if inside:
            start = min(inside, key=lambda i: abs(i - hint))
            return start, start + len(candidate), how
        if found:
            return None, None, "span_outside_segment"
    norm_text, index = _normalised_with_index(text)
    norm_quote, _ = _normalised_with_index(quote.strip(" \t\n\"'“”‘’.,;:!?…"))
    if norm_quote:
        hits = [i.start() for i in re.finditer(re.escape(norm_quote), norm_text)]
        spans = [(index[i], index[i + len(norm_quote) - 1] + 1) for i in hits]
        inside = [(a, b) for a, b in spans if lo <= a and b <= hi]
        if inside:
            a, b = min(inside, key=lambda s: abs(s[0] - hint))
            return a, b, "normalised"
        if spans:
            return None, None, "span_outside_segment"
    return None, None, "span_not_in_message"


def _residual(
    segment: SegmentInput, code: str, reason: str, payload: dict, message_id: str | None, now: datetime
) -> dict:
    return dict(
        stage=STAGE,
        segment_id=segment.segment_id,
        message_id=message_id,
        mention_id=None,
        reason_code=code,
        reason=reason,
        payload=payload,
        recorded_at=now,
    )


def map_extraction(
    segment: SegmentInput, extraction: SegmentExtraction, extractor: str, now: datetime
) -> MappedSegment:
    out = MappedSegment()
    refs = segment.by_ref()
    merged: dict[tuple[str, str], tuple[ConceptCandidate, str, list[str]]] = {}
    # relations name their target by the title the teacher gave it: map it to the normalised one
    renamed = {
        normalise_title(c.title).casefold(): normalise_title(c.title, c.type) for c in extraction.concepts
    }
    for candidate in extraction.concepts:
        out.stats["candidates"] += 1
        title = normalise_title(candidate.title, candidate.type)
        if title.casefold() in _PLACEHOLDER_TITLES or not re.search(r"\w", title):
            out.stats["rejected"] += 1
            out.stats["rejected:empty_title"] += 1
            out.residuals.append(
                _residual(
                    segment,
                    "empty_title",
                    f"title {candidate.title!r} names nothing",
                    candidate.model_dump(),
                    None,
                    now,
                )
            )
            continue
        key = (candidate.type, title.casefold())
        if candidate.type in FACT_TYPES:  # two facts may share a short title; one fact is one restatement
            key = (*key, re.sub(r"\s+", " ", candidate.description).strip().casefold())
        if key in merged:  # the same concept twice in one answer: one candidate, all its evidence
            first, first_title, aliases = merged[key]
            merged[key] = (
                first.model_copy(
                    update={
                        "evidence": first.evidence + candidate.evidence,
                        "relations": first.relations + candidate.relations,
                        "claims": first.claims + candidate.claims,
                        "confidence": max(first.confidence, candidate.confidence),
                    }
                ),
                first_title,
                aliases + list(candidate.aliases),
            )
            out.stats["merged_duplicates"] += 1
        else:
            merged[key] = (candidate, title, list(candidate.aliases))
    for candidate, title, raw_aliases in merged.values():
        aliases: list[str] = []
        for alias in raw_aliases:
            a = normalise_title(alias)
            if a and a.casefold() != title.casefold() and a.casefold() not in {x.casefold() for x in aliases}:
                aliases.append(a)
        aliases = aliases[:MAX_ALIASES]
        description = re.sub(r"\s+", " ", candidate.description).strip()
        relations = []
        for rel in candidate.relations:
            target = normalise_title(rel.target_title)
            target = renamed.get(target.casefold(), target)
            if target and target.casefold() != title.casefold():
                relations.append(
                    {"target_title": target, "relation": rel.relation, "confidence": rel.confidence}
                )
        rows: dict[str, dict] = {}
        for span in candidate.evidence:
            out.stats["spans_proposed"] += 1
            message = refs.get(span.message_ref.strip())
            if message is None:
                out.stats["spans_rejected:unknown_message"] += 1
                out.residuals.append(
                    _residual(
                        segment,
                        "unknown_message",
                        f"evidence cites {span.message_ref!r}, not a message of this segment",
                        span.model_dump(),
                        None,
                        now,
                    )
                )
                continue
            start, end, how = locate(message, span.quote, span.char_start)
            if start is None:
                out.stats[f"spans_rejected:{how}"] += 1
                out.residuals.append(
                    _residual(
                        segment,
                        how,
                        f"quote {span.quote[:80]!r} is not verbatim in this segment's part of the message",
                        span.model_dump(),
                        message.message_id,
                        now,
                    )
                )
                continue
            out.stats["spans_verified"] += 1
            if how != "exact":
                out.stats[f"spans_{how}"] += 1
            mention_id = stable_uuid(
                "mention",
                segment.segment_id,
                extractor,
                candidate.type,
                title.casefold(),
                message.message_id,
                start,
                end,
            )
            rows[mention_id] = dict(
                mention_id=mention_id,
                segment_id=segment.segment_id,
                message_id=message.message_id,
                conversation_id=segment.conversation_id,
                span_start=start,
                span_end=end,
                surface=message.text[start:end],
                title=title,
                type=candidate.type,
                description=description or message.text[start:end],
                aliases=aliases,
                relations=relations,
                confidence=float(candidate.confidence),
                consolidated_id=None,
                extractor=extractor,
                extracted_at=now,
                message_created_at=message.created_at,
                # the revisable facts stated, as the teacher gave them (the revision layer's claims stage
                # resolves subjects, slots and valid times)
                claims=[c.model_dump() for c in candidate.claims],
            )
        if not rows:
            out.stats["rejected"] += 1
            out.stats["rejected:no_verified_span"] += 1
            out.residuals.append(
                _residual(
                    segment,
                    "no_verified_span",
                    f"candidate {title!r} has no evidence span found verbatim in the segment",
                    candidate.model_dump(),
                    None,
                    now,
                )
            )
            continue
        out.stats["accepted"] += 1
        out.mentions.extend(rows.values())
    _map_reactions(segment, extraction.reactions, extractor, now, out)
    return out


def _map_reactions(
    segment: SegmentInput,
    reactions: list[ReactionCandidate],
    extractor: str,
    now: datetime,
    out: MappedSegment,
) -> None:
    refs = segment.by_ref()
    seen: set[str] = set()
    for item in reactions:
        out.stats["reactions_proposed"] += 1
        r = item.reaction
        message = refs.get(r.evidence_message_id.strip())
        if message is None or not message.is_person:
            code = "unknown_message" if message is None else "reaction_not_from_person"
            out.stats[f"reactions_rejected:{code}"] += 1
            out.residuals.append(
                _residual(
                    segment,
                    code,
                    f"reaction cites {r.evidence_message_id!r}, not a person's message of this segment",
                    item.model_dump(),
                    None,
                    now,
                )
            )
            continue
        start, end, how = locate(message, item.cue, 0)
        if start is None:
            out.stats[f"reactions_rejected:cue_{how}"] += 1
            out.residuals.append(
                _residual(
                    segment,
                    f"cue_{how}",
                    f"reaction cue {item.cue[:80]!r} is not verbatim in the message",
                    item.model_dump(),
                    message.message_id,
                    now,
                )
            )
            continue
        # the cue's offset is part of the id: a long message split over several segments can show the same
        # state once per piece, and each piece is its own piece of evidence
        reaction_id = stable_uuid(
            "reaction", message.message_id, extractor, r.state, r.state_raw.casefold(), start
        )
        if reaction_id in seen:
            continue
        seen.add(reaction_id)
        out.stats["reactions_accepted"] += 1
        out.reactions.append(
            dict(
                reaction_id=reaction_id,
                message_id=message.message_id,
                segment_id=segment.segment_id,
                conversation_id=segment.conversation_id,
                state=r.state,
                state_raw=r.state_raw,
                intensity=float(r.intensity),
                valence=r.valence,
                epistemic_status=r.epistemic_status,
                evidence_text=message.text[start:end],
                span_start=start,
                span_end=end,
                topic_id=None,
                occurred_at=message.created_at,
                extractor=extractor,
                recorded_at=now,
                expires_at=None,
            )
        )

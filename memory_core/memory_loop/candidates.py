"""A candidate of the memory loop: one `mentions` row (written by the Semantic Mapper) as the loop sees it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import cached_property

from memory_core.concepts.names import normalise_name
from memory_core.ontology.concepts import FACT_TYPES, concept_embedding_key
from memory_core.ontology.titles import fact_title


@dataclass(frozen=True)
class Candidate:
    mention_id: str
    segment_id: str
    message_id: str
    conversation_id: str
    span_start: int
    span_end: int
    surface: str
    title: str
    type: str
    description: str
    aliases: tuple[str, ...]
    relations: tuple[dict, ...]
    confidence: float
    extractor: str
    message_created_at: datetime
    usage: str = ""  # a name's usage context in its message ("LGBTQ support group"), set by the loop
    # the revisable facts the teacher says it states, as (subject, slot key) → (value, polarity): a concept
    # holding another value of one of them is not the same fact, nor a fact it is an instance of
    facts: tuple[tuple[tuple[str, str], tuple[str, str]], ...] = ()

    @classmethod
    def from_row(cls, row) -> Candidate:
        r = row._mapping if hasattr(row, "_mapping") else row
        return cls(
            mention_id=r["mention_id"],
            segment_id=r["segment_id"],
            message_id=r["message_id"],
            conversation_id=r["conversation_id"],
            span_start=int(r["span_start"]),
            span_end=int(r["span_end"]),
            surface=r["surface"],
            title=r["title"],
            type=r["type"],
            description=r["description"],
            aliases=tuple(r["aliases"] or ()),
            relations=tuple(r["relations"] or ()),
            confidence=float(r["confidence"]),
            extractor=r["extractor"],
            message_created_at=r["message_created_at"],
            facts=stated_facts(r.get("claims")),
        )

    @cached_property  # read by the screen, the router and the instance rules: a regex rewrite, done once
    def canonical_title(self) -> str:
        """The title a concept created from this candidate gets: a fact's short canonical form (the mapper
        writes it already; mentions of an older extractor may still carry a whole sentence), a name as is."""
        title = self.title.strip()
        if self.type in FACT_TYPES:
            return fact_title(title) or title
        return title

    @property
    def embedding_key(self) -> str:
        """Compared in the same space as concepts: the exact concept key of the candidate's own title/description."""
        return concept_embedding_key(self.title, self.description)

    @property
    def names(self) -> list[str]:
        """Normalised title and aliases, deduplicated, title first."""
        out: list[str] = []
        for name in (self.title, *self.aliases):
            norm = normalise_name(name)
            if norm and norm not in out:
                out.append(norm)
        return out

    def evidence_span(self) -> dict:
        """The `EvidenceSpan` this candidate contributes, as a patch states it (the ontology's field names)."""
        return {
            "source_id": self.segment_id,
            "message_id": self.message_id,
            "text": self.surface,
            "confidence": round(self.confidence, 4),
            "char_start": self.span_start,
            "char_end": self.span_end,
        }


def stated_facts(claims) -> tuple[tuple[tuple[str, str], tuple[str, str]], ...]:
    """(subject, slot key) → (value, polarity) of a mention's stored claims (`mentions.claims`; None for
    mentions extracted before claims), case-folded."""
    out = []
    for c in claims or ():
        key = f"{c['slot']}:{c['qualifier']}" if c.get("qualifier") else c["slot"]
        out.append(((c["subject"].casefold(), key), (c["value"].casefold().strip(), c["polarity"])))
    return tuple(out)


def other_value(held: dict[tuple[str, str], set[tuple[str, str]]], facts) -> str:
    """Why a concept holding `held` facts cannot take a candidate stating `facts` ("" when it can): it
    holds another value (or the opposite polarity) of one of the candidate's (subject, slot)s."""
    for key, value in facts:
        others = held.get(key, set()) - {value}
        if others:
            theirs = ", ".join(sorted(f"{v}{' (negated)' if p == 'negated' else ''}" for v, p in others))
            return f"it holds {key[1]} = {theirs} of {key[0]}, the candidate {value[0]}"
    return ""

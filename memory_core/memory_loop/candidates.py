"""A candidate of the memory loop: one `mentions` row (written by the Semantic Mapper) as the loop sees it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
        )

    @property
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

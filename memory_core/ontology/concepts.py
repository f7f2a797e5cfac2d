"""ConceptHypothesis: a revisable epistemic object with typed relations and message-level evidence."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import Field

from memory_core.ontology.strict import StrictBase

ConceptType = Literal["behavioral_pattern", "project", "event", "tension", "goal", "belief", "entity"]
ConceptState = Literal["active", "weak", "merged", "split", "archived"]
TrustState = Literal["stable", "weakened", "disputed", "broken", "stale", "archived"]
RelationType = Literal["causes", "conflicts_with", "supports", "instance_of", "enables"]

CONCEPT_TYPES: tuple[str, ...] = get_args(ConceptType)
CONCEPT_STATES: tuple[str, ...] = get_args(ConceptState)
TRUST_STATES: tuple[str, ...] = get_args(TrustState)
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)


class EvidenceSpan(StrictBase):
    source_id: str = Field(description="the segment the span was read in")
    message_id: str = Field(description="the message holding the span")
    text: str = Field(description="verbatim text of the message between the offsets")
    confidence: float = Field(ge=0.0, le=1.0)
    char_start: int = Field(ge=0, description="offset in the message text")
    char_end: int = Field(ge=0)


class ConceptRelation(StrictBase):
    target_id: str
    relation: RelationType
    confidence: float = Field(ge=0.0, le=1.0)


class ConceptHypothesis(StrictBase):
    concept_id: str
    title: str
    type: ConceptType
    description: str
    state: ConceptState
    trust: TrustState
    confidence: float = Field(ge=0.0, le=1.0)
    aliases: list[str]
    evidence_spans: list[EvidenceSpan]
    relations: list[ConceptRelation]
    revision_count: int = Field(ge=0)
    first_seen: datetime
    last_seen: datetime
    recorded_at: datetime

    @property
    def embedding_key(self) -> str:
        """The exact cache key of a concept's embedding (DESIGN §4.6)."""
        return concept_embedding_key(self.title, self.description)


def concept_embedding_key(title: str, description: str) -> str:
    return f"{title}: {description}"

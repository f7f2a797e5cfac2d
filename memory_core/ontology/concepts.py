"""ConceptHypothesis: a revisable epistemic object with typed relations and message-level evidence.

The title / description contract (every teacher, the Semantic Mapper and the memory loop follow it; the
checks live in `memory_core.ontology.titles`):

- **name types** (`entity`, `project`): the title IS the name, as written ("Sweden", "Ledgerly", "garden
  planner app"), never a sentence. The description says what the thing is, from the evidence, as a
  definition that starts with the name: "Oscar is Caroline's guinea pig.", "Ledgerly is the user's Flask
  app for invoices."; when the text says nothing about it, "LGBTQ, mentioned by Caroline." It is never the
  event the name happened to occur in: that event is a fact concept of its own. A concept of a name type
  that absorbs many mentions keeps the best definition seen and lists a few of the phrases it is used in
  ("… Mentioned in: LGBTQ support group; LGBTQ art show.").
- **fact types** (`event`, `goal`, `belief`, `behavioral_pattern`, `tension`): the title is a short
  canonical handle of the fact: the subject and the head phrase, at most `MAX_FACT_TITLE_WORDS` words, no
  dates, no filler adverbs, no truncation marks ("Caroline went to a LGBTQ support group", "Melanie plays
  clarinet"). The description is the whole fact restated in the third person with who and, when the text
  gives one, the resolved date ("Caroline went to a LGBTQ support group yesterday (7 May 2023)."): it is
  the text a later question is matched against, so it keeps the words a question would use.

Concept embeddings use the exact key `"{title}: {description}"` (`concept_embedding_key`).

`ConceptHypothesis` is the one concept object: the concept store (`memory_core.concepts.store`) reads and
writes `canonical_concepts` rows as it, the memory loop and the gardener change it, and the other shapes a
concept takes (the router's `ConceptView`, the adjudicator's `ConceptOption`, the gardener's
`ConceptRecord`) are projections that hold it next to what their stage knows about it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from pydantic import ConfigDict, Field, field_validator

from memory_core.ontology.strict import StrictBase

ConceptType = Literal["behavioral_pattern", "project", "event", "tension", "goal", "belief", "entity"]
ConceptState = Literal["active", "weak", "merged", "split", "archived"]
TrustState = Literal["stable", "weakened", "disputed", "broken", "stale", "archived"]
RelationType = Literal["causes", "conflicts_with", "supports", "instance_of", "enables"]
# a stored relation is one a teacher can propose, or one the memory loop derives: `about`, from a fact to the
# names and hubs whose evidence lies inside its evidence (`memory_core.memory_loop.relations`)
ConceptRelationType = Literal["causes", "conflicts_with", "supports", "instance_of", "enables", "about"]

CONCEPT_TYPES: tuple[str, ...] = get_args(ConceptType)
NAME_TYPES: tuple[str, ...] = ("entity", "project")
FACT_TYPES: tuple[str, ...] = ("event", "goal", "belief", "behavioral_pattern", "tension")
FACT_TITLE_WORDS = 8  # a fact title is cut to about this many words...
MAX_FACT_TITLE_WORDS = 10  # ...and never more than this
MAX_NAME_TITLE_WORDS = 10
CONCEPT_STATES: tuple[str, ...] = get_args(ConceptState)
TRUST_STATES: tuple[str, ...] = get_args(TrustState)
RELATION_TYPES: tuple[str, ...] = get_args(RelationType)
LIVE_STATES: tuple[str, ...] = ("active", "weak")


class EvidenceSpan(StrictBase):
    source_id: str = Field(description="the segment the span was read in")
    message_id: str = Field(description="the message holding the span")
    text: str = Field(description="verbatim text of the message between the offsets")
    confidence: float = Field(ge=0.0, le=1.0)
    char_start: int = Field(ge=0, description="offset in the message text")
    char_end: int = Field(ge=0)


class ConceptRelation(StrictBase):
    target_id: str
    relation: ConceptRelationType
    confidence: float = Field(ge=0.0, le=1.0)


class ConceptHypothesis(StrictBase):
    """A `canonical_concepts` row (docs/architecture.md §3). `support_count` counts the evidence that raised its
    confidence; `merged_into` names the concept a merged one points to ("" when it is not merged: the
    column holds NULL). Assignments are validated, so a patch's plain values become typed fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

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
    support_count: int = Field(ge=0)
    first_seen: datetime
    last_seen: datetime
    recorded_at: datetime
    merged_into: str

    @field_validator("merged_into", mode="before")
    @classmethod
    def _null_is_empty(cls, value: str | None) -> str:
        return value or ""

    @property
    def embedding_key(self) -> str:
        """The exact cache key of a concept's embedding (docs/architecture.md §4.6)."""
        return concept_embedding_key(self.title, self.description)

    @property
    def live(self) -> bool:
        """Active or weak: a concept the loop still attaches to (merged / split / archived ones are not)."""
        return self.state in LIVE_STATES


def concept_embedding_key(title: str, description: str) -> str:
    return f"{title}: {description}"


def type_family(concept_type: str) -> str:
    """ "name" for entity/project, "fact" for the statement types, "" outside the ontology."""
    if concept_type in NAME_TYPES:
        return "name"
    return "fact" if concept_type in FACT_TYPES else ""

"""What a teacher (LLM or offline) returns per segment: candidate concepts with verbatim evidence and the
user's reactions. Strict response models: every field required, no Optional, no defaults; empty is "" or [].

Messages are referred to by the short handles the prompt shows (`m1`, `m2`, ...), never by UUID: a model
copies a two-character handle reliably, the Semantic Mapper maps it back to the message id.
"""

from __future__ import annotations

from pydantic import Field

from memory_core.ontology.claims import ClaimCandidate
from memory_core.ontology.concepts import ConceptType, RelationType
from memory_core.ontology.reactions import UserReaction
from memory_core.ontology.strict import StrictBase


class CandidateSpan(StrictBase):
    message_ref: str = Field(description="handle of the message holding the quote, e.g. m1")
    quote: str = Field(description="text copied verbatim from that message (a name, a clause or a sentence)")
    char_start: int = Field(
        ge=0, description="best-effort offset of the quote in the message; the mapper verifies it"
    )
    char_end: int = Field(ge=0, description="best-effort end offset (exclusive)")


class CandidateRelation(StrictBase):
    target_title: str = Field(description="title of another candidate concept of this answer")
    relation: RelationType
    confidence: float = Field(ge=0.0, le=1.0)


class ConceptCandidate(StrictBase):
    title: str = Field(
        description="entity/project: the name as written; a fact type: subject and head phrase in at most "
        "eight words, no date (e.g. 'Nadia runs the Chicago Marathon')"
    )
    type: ConceptType
    description: str = Field(
        description="entity/project: what it is, starting with the name ('Oscar is Caroline's guinea pig.'); "
        "a fact type: the whole fact in one sentence, third person, with who and the resolved date "
        "(e.g. 'Nadia is running the Chicago Marathon in October 2023.')"
    )
    aliases: list[str] = Field(description="other names used for the same thing in the text; [] when none")
    confidence: float = Field(ge=0.0, le=1.0)
    evidence: list[CandidateSpan] = Field(description="at least one verbatim quote supporting the concept")
    relations: list[CandidateRelation] = Field(
        description="typed relations to other candidates; [] when none"
    )
    claims: list[ClaimCandidate] = Field(
        description="the revisable facts the concept states (where someone lives, works, what they own and "
        "how many, a favourite, a schedule ...), one per slot; [] for names and facts setting no slot"
    )


class ReactionCandidate(StrictBase):
    reaction: UserReaction
    cue: str = Field(description="the words of the evidence message, verbatim, that show the state")


class SegmentExtraction(StrictBase):
    """The teacher's answer for one segment."""

    concepts: list[ConceptCandidate]
    reactions: list[ReactionCandidate] = Field(
        description="states of the people speaking; [] when none is shown"
    )

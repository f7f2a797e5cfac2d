"""The optional LLM adjudicator for the router's ambiguous band.

When a candidate's best compatible concept scores between the ambiguous and the attach thresholds, rules
alone cannot tell "the same concept, phrased differently" from "a neighbour". An adjudicator may then
choose attach (to one of the offered concepts), create or reject. The default is rule-only (no
adjudicator): the router creates, which keeps concepts pure and leaves merges to the gardener.

`LLMAdjudicator` works with any strict-schema client exposing

    structured(system: str, user: str, response_model: type[M]) -> M

(the project's LLM client: constrained decoding against the strict Pydantic model below, with caching,
retries and accounting on the client's side).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, Field

from memory_core.memory_loop.candidates import Candidate
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.ontology.strict import StrictBase

M = TypeVar("M", bound=BaseModel)


class StructuredLLM(Protocol):
    def structured(self, system: str, user: str, response_model: type[M]) -> M: ...


class AdjudicationDecision(StrictBase):
    """The adjudicator's answer (strict schema: every field required, no defaults)."""

    decision: Literal["attach", "create", "reject"] = Field(
        description="attach: the candidate IS one of the offered concepts; create: it is a new concept; "
        "reject: it is not a meaningful concept"
    )
    concept_id: str = Field(
        description="the chosen concept's id when decision is attach, else an empty string"
    )
    rationale: str = Field(description="one or two sentences citing what in the texts decides it")
    confidence: float = Field(ge=0.0, le=1.0)


ADJUDICATION_SYSTEM = (
    "You maintain a user's long-term memory as a set of concepts. A new candidate concept was extracted from "
    "a message. Decide whether it denotes the same thing as one of the existing concepts offered (attach), "
    "a different thing (create), or nothing worth remembering (reject). Attach only when both refer to the "
    "same project, person, event, goal, belief, pattern or tension; related but distinct things are create. "
    "Answer with the JSON schema given."
)


@dataclass(frozen=True)
class ConceptOption:
    """A concept offered to the adjudicator, with the retriever's scores for the candidate."""

    concept: ConceptHypothesis
    scores: dict


def adjudication_prompt(candidate: Candidate, options: list[ConceptOption]) -> tuple[str, str]:
    """(system, user) messages: the candidate with its evidence span and the offered concepts with scores."""
    payload = {
        "candidate": {
            "title": candidate.title,
            "type": candidate.type,
            "description": candidate.description,
            "aliases": list(candidate.aliases),
            "evidence": candidate.surface,
        },
        "existing_concepts": [
            {
                "concept_id": o.concept.concept_id,
                "title": o.concept.title,
                "type": o.concept.type,
                "description": o.concept.description,
                "aliases": list(o.concept.aliases),
                "similarity": o.scores.get("similarity"),
            }
            for o in options
        ],
    }
    return ADJUDICATION_SYSTEM, json.dumps(payload, ensure_ascii=False, indent=1)


class Adjudicator(ABC):
    name: str

    @abstractmethod
    def adjudicate(self, candidate: Candidate, options: list[ConceptOption]) -> AdjudicationDecision:
        """Decide for an ambiguous candidate; raising means "no answer" (the router falls back to its rule)."""


class LLMAdjudicator(Adjudicator):
    def __init__(self, client: StructuredLLM, name: str = "llm"):
        self.client = client
        self.name = name

    def adjudicate(self, candidate: Candidate, options: list[ConceptOption]) -> AdjudicationDecision:
        system, user = adjudication_prompt(candidate, options)
        return self.client.structured(system=system, user=user, response_model=AdjudicationDecision)

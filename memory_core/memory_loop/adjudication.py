"""The optional LLM adjudicator for the router's ambiguous band.

When a candidate's best compatible concept scores between the ambiguous and the attach thresholds, rules
alone cannot tell "the same concept, phrased differently" from "a neighbour". An adjudicator may then
choose attach (to one of the offered concepts), create or reject. Without one the router creates, which
keeps concepts pure and leaves merges to the gardener.

`LLMAdjudicator` asks the project's strict client (`memory_core.llm.LLMClient`): the prompt
(`adjudication_request`) is paired with its strict response model (`AdjudicationDecision`), the client
retries transport failures and feeds validation errors back once, the cached client answers a repeated
question from the cache, and every call is accounted in `llm_calls` (stage `memory_loop`) as soon as it
returns. A call that ends without a valid answer raises `AdjudicationFailed`: the router then decides by its
rule and says why, and the loop records the failure as a residual.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from memory_core.errors import MemoryOSError
from memory_core.llm.accounting import call_row, record_calls
from memory_core.llm.base import LLMClient, StructuredRequest
from memory_core.memory_loop.candidates import Candidate
from memory_core.ontology.concepts import ConceptHypothesis
from memory_core.ontology.strict import StrictBase
from memory_core.store.db import CorpusStore

PROMPT_ID = "concept-adjudication/v1"
STAGE = "memory_loop"


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


class AdjudicationFailed(MemoryOSError):
    """The adjudicator gave no usable answer (the router falls back to its rule)."""


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


def adjudication_request(
    candidate: Candidate, options: list[ConceptOption]
) -> StructuredRequest[AdjudicationDecision]:
    system, user = adjudication_prompt(candidate, options)
    return StructuredRequest(
        prompt_id=PROMPT_ID, system=system, user=user, response_model=AdjudicationDecision
    )


class Adjudicator(ABC):
    name: str

    @abstractmethod
    def adjudicate(self, candidate: Candidate, options: list[ConceptOption]) -> AdjudicationDecision:
        """Decide for an ambiguous candidate; raising means "no answer" (the router falls back to its rule)."""


class LLMAdjudicator(Adjudicator):
    """Adjudication by an LLM through the strict client; calls are accounted in `store`'s `llm_calls`."""

    def __init__(self, client: LLMClient, store: CorpusStore | None = None):
        self.client = client
        self.store = store
        self.name = f"llm:{client.model}"
        self.calls = 0
        self.cache_hits = 0

    def adjudicate(self, candidate: Candidate, options: list[ConceptOption]) -> AdjudicationDecision:
        result = self.client.structured(adjudication_request(candidate, options))
        self.calls += 1
        self.cache_hits += int(result.cache_hit)
        if self.store is not None:
            record_calls(self.store.staging, [call_row(result, STAGE, candidate.segment_id)])
        if not result.ok:
            raise AdjudicationFailed(f"LLM {result.outcome}: {result.error[:300]}")
        return result.parsed

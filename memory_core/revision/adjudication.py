"""The optional LLM adjudicator of fact histories: supersede, conflict or unrelated, where rules cannot settle it.

The rules settle a new value meeting an open state when it was said well after the state's latest evidence
(supersede) or says that something changed. What is left — two different values of one subject's slot said
at about the same time, neither saying it changed — is asked of an LLM when one is configured: the prompt
(`adjudication_request`) is paired with its strict response model (`FactDecision`), the project's strict
client retries transport failures and feeds a validation error back once, a repeated question is answered
from the cache, and every call is accounted in `llm_calls` (stage `fact_states`) as soon as it returns. No
LLM, or a call without a usable answer, leaves the rules' fallback: conflict (both disputed), with the
failure counted.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from typing import Literal

from pydantic import Field

from memory_core.errors import MemoryOSError
from memory_core.llm.accounting import call_row, record_calls
from memory_core.llm.base import LLMClient, StructuredRequest
from memory_core.ontology.claims import SLOTS
from memory_core.ontology.strict import StrictBase
from memory_core.revision.history import ClaimView, StateDraft, Verdict
from memory_core.store.db import CorpusStore

PROMPT_ID = "fact-adjudication/v1"
STAGE = "fact_states"


class FactDecision(StrictBase):
    """The adjudicator's answer (strict schema: every field required, no defaults)."""

    decision: Literal["supersede", "conflict", "unrelated"] = Field(
        description="supersede: the later statement replaces the earlier value (it changed); conflict: both "
        "cannot be true at once and the texts do not say which holds; unrelated: both can be true, they are "
        "about different things"
    )
    rationale: str = Field(description="one sentence citing what in the texts decides it")
    confidence: float = Field(ge=0.0, le=1.0)


ADJUDICATION_SYSTEM = (
    "You maintain the facts of a user's long-term memory. For one person and one attribute, an earlier "
    "statement and a later one give different values, said at about the same time. Decide: supersede (the "
    "later one replaces the earlier: the value changed or was corrected), conflict (both cannot hold at once "
    "and nothing says which one does), or unrelated (both can be true: they are about different things). "
    "Judge only from the quoted texts. Answer with the JSON schema given."
)


class AdjudicationFailed(MemoryOSError):
    """The adjudicator gave no usable answer (the rules' fallback decides)."""


def _statement(claim: ClaimView) -> dict:
    return {
        "value": claim.value,
        "said_at": claim.spoken_at.isoformat(timespec="minutes"),
        "valid_from": claim.valid_from.isoformat(timespec="minutes"),
        "quote": claim.text,
    }


def adjudication_request(open_states: list[StateDraft], claim: ClaimView) -> StructuredRequest[FactDecision]:
    what, qualifier = SLOTS.get(claim.slot, ("", ""))
    payload = {
        "subject": claim.subject_label,
        "attribute": claim.attribute,
        "attribute_means": what,
        "earlier": [_statement(c) for s in open_states for c in s.claims[-2:]],
        "later": _statement(claim),
    }
    return StructuredRequest(
        prompt_id=PROMPT_ID,
        system=ADJUDICATION_SYSTEM,
        user=json.dumps(payload, ensure_ascii=False, indent=1),
        response_model=FactDecision,
    )


class FactAdjudicator(ABC):
    name: str

    @abstractmethod
    def adjudicate(self, open_states: list[StateDraft], claim: ClaimView) -> Verdict:
        """Decide for a pair the rules could not settle; raising means "no answer"."""


class LLMFactAdjudicator(FactAdjudicator):
    """Adjudication by an LLM through the strict client; calls are accounted in `store`'s `llm_calls`."""

    def __init__(self, client: LLMClient, store: CorpusStore | None = None):
        self.client = client
        self.store = store
        self.name = f"llm:{client.model}"
        self.calls = 0
        self.cache_hits = 0
        self.failures = 0

    def adjudicate(self, open_states: list[StateDraft], claim: ClaimView) -> Verdict:
        result = self.client.structured(adjudication_request(open_states, claim))
        self.calls += 1
        self.cache_hits += int(result.cache_hit)
        if self.store is not None:
            record_calls(self.store.staging, [call_row(result, STAGE, None)])
        if not result.ok:
            self.failures += 1
            raise AdjudicationFailed(f"LLM {result.outcome}: {result.error[:300]}")
        answer = result.parsed
        return Verdict(answer.decision, self.name, answer.rationale[:500])

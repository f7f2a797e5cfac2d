"""The optional LLM pass of Phase 0: a reviewer keeps or drops the offline proposals, a batch per call.

The prompt is paired with its strict response model (`TriageReview`). A batch shows each proposal under a
handle (p1, p2, ...) with its concepts, a few evidence quotes with their message ids and the offline
rationale; the model answers one verdict per handle. A kept proposal's score becomes the mean of the
offline and the LLM score and its rationale gains the reviewer's sentence; a dropped one is not written.
A failed call (after the client's retries) leaves its batch as offline scoring made it and is recorded as a
`residuals` row with the reason; calls are cached and accounted in `llm_calls` like every other stage's.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import Field

from memory_core.gardener.proposals import ScoredProposal
from memory_core.gardener.triage.inventory import Inventory
from memory_core.llm.accounting import call_row, record_calls
from memory_core.llm.base import LLMClient, StructuredRequest
from memory_core.ontology.strict import StrictBase
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import residuals

STAGE = "gardener_triage"
EVIDENCE_PER_CONCEPT = 3


class ProposalVerdict(StrictBase):
    ref: str = Field(description="the proposal's handle as given (p1, p2, ...)")
    verdict: Literal["keep", "drop"] = Field(
        description="keep: the evidence supports the proposal; drop: it does not, or it is unclear"
    )
    score: float = Field(ge=0.0, le=1.0, description="how strongly the evidence supports the proposal")
    rationale: str = Field(description="one sentence naming what in the evidence decides it")


class TriageReview(StrictBase):
    verdicts: list[ProposalVerdict]


TRIAGE_SYSTEM = """\
You review maintenance proposals for a person's long-term memory, a set of concepts each backed by quotes
from their conversations. Judge each proposal only from the quotes shown; never invent facts.

- merge: keep only when all the concepts denote the same thing (the same person, pet, place, project, goal,
  belief, habit, event or worry). Related but distinct things, or one name used by different people for
  different things, are drop.
- split: keep when the concept's quotes clearly describe two different things that happen to share a name.
  Different facts about one thing are drop.
- macro_concept: keep when the concept is a real hub many other memories revolve around (a project, a
  community, a person, a long-running interest); a stock phrase or a generic word is drop.
- noise: keep when the concept is conversational filler, a greeting, a date word or a formula with no
  lasting information; a real (even minor) fact is drop.

Answer one verdict per proposal handle, with the JSON schema given.
"""

TRIAGE_PROMPT_ID = "gardener-triage/v1"


@dataclass
class LLMTriageStats:
    model: str = ""
    batches: int = 0
    calls: int = 0
    cache_hits: int = 0
    failed_batches: int = 0
    verdicts: Counter = field(default_factory=Counter)  # keep / drop / missing

    def as_dict(self) -> dict:
        return {
            "model": self.model,
            "batches": self.batches,
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "failed_batches": self.failed_batches,
            **{f"verdict_{k}": v for k, v in sorted(self.verdicts.items())},
        }


def render_batch(inventory: Inventory, batch: list[ScoredProposal]) -> str:
    items = []
    for i, p in enumerate(batch, 1):
        concepts = []
        for cid in p.concept_ids:
            r = inventory.concepts.get(cid)
            if r is None:
                continue
            concepts.append(
                {
                    "concept_id": cid,
                    "title": r.concept.title,
                    "type": r.concept.type,
                    "description": r.concept.description,
                    "aliases": r.concept.aliases[:8],
                    "evidence_count": r.concept.support_count,
                    "evidence": [
                        {"message_id": e.message_id, "quote": e.surface, "context": e.description}
                        for e in r.evidence[:EVIDENCE_PER_CONCEPT]
                    ],
                }
            )
        items.append(
            {
                "ref": f"p{i}",
                "category": p.category,
                "offline_score": p.score,
                "offline_rationale": p.rationale,
                "concepts": concepts,
            }
        )
    return json.dumps({"proposals": items}, ensure_ascii=False, indent=1)


def triage_request(inventory: Inventory, batch: list[ScoredProposal]) -> StructuredRequest[TriageReview]:
    return StructuredRequest(
        prompt_id=TRIAGE_PROMPT_ID,
        system=TRIAGE_SYSTEM,
        user=render_batch(inventory, batch),
        response_model=TriageReview,
    )


def review_with_llm(
    store: CorpusStore,
    client: LLMClient,
    inventory: Inventory,
    proposals: list[ScoredProposal],
    batch_size: int = 10,
) -> tuple[list[ScoredProposal], LLMTriageStats]:
    stats = LLMTriageStats(model=client.model)
    out: list[ScoredProposal] = []
    for start in range(0, len(proposals), max(1, batch_size)):
        batch = proposals[start : start + batch_size]
        stats.batches += 1
        result = client.structured(triage_request(inventory, batch))
        record_calls(store.staging, [call_row(result, STAGE)])
        stats.calls += 1
        stats.cache_hits += int(result.cache_hit)
        if not result.ok:
            stats.failed_batches += 1
            _record_failure(store, batch, result.outcome, result.error)
            out += batch
            continue
        verdicts = {v.ref: v for v in result.parsed.verdicts}
        for i, p in enumerate(batch, 1):
            v = verdicts.get(f"p{i}")
            if v is None:
                stats.verdicts["missing"] += 1
                out.append(p)
                continue
            stats.verdicts[v.verdict] += 1
            if v.verdict == "drop":
                continue
            out.append(
                replace(
                    p,
                    score=round((p.score + v.score) / 2, 4),
                    rationale=f"{p.rationale} LLM review ({client.model}): {v.rationale.strip()}",
                    proposer=f"offline+llm:{client.model}"[:48],
                )
            )
    return out, stats


def _record_failure(store: CorpusStore, batch: list[ScoredProposal], outcome: str, error: str) -> None:
    with store.staging.begin() as conn:
        conn.execute(
            residuals.insert(),
            [
                {
                    "stage": STAGE,
                    "segment_id": None,
                    "message_id": None,
                    "mention_id": None,
                    "reason_code": f"llm_{outcome}",
                    "reason": f"LLM triage review failed ({outcome}): {error[:500]}; offline proposals kept",
                    "payload": {"proposal_ids": [p.proposal_id(store.name) for p in batch]},
                    "recorded_at": utcnow(),
                }
            ],
        )

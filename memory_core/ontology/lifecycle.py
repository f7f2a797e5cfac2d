"""LifecycleProposals (docs/architecture.md §4.10): the gardener's Phase 0 manifest. Proposals, never truth."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory_core.ontology.strict import StrictBase

ProposalCategory = Literal["merge", "split", "macro_concept", "noise"]


class LifecycleProposal(StrictBase):
    category: ProposalCategory
    concept_ids: list[str] = Field(description="the concepts the proposal is about (merge: canonical first)")
    score: float = Field(ge=0.0, le=1.0)
    rationale: str
    cited_message_ids: list[str] = Field(description="source messages supporting the proposal")


class LifecycleProposals(StrictBase):
    merge_candidates: list[LifecycleProposal]
    split_candidates: list[LifecycleProposal]
    macro_concept_candidates: list[LifecycleProposal]
    noise_candidates: list[LifecycleProposal]

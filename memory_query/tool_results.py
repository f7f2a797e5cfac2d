"""The typed result of every agent tool, one pydantic model per tool.

The base tools (`memory_query.tools`) build them, the scoping layer (`memory_query.scoping`) filters them
with `model_copy`, the agent loop reads their attributes, the MCP server returns them as structured output
(their JSON schema is the tool's output schema) and the explorer renders them. Times are datetimes in the
models and ISO strings on the wire (`model_dump(mode="json")`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, computed_field


class ToolResult(BaseModel):
    """Base of the tool results: a result is data, never edited in place by a consumer (the scoping layer
    makes filtered copies)."""

    model_config = ConfigDict(frozen=True)

    def returned_ids(self) -> list[str]:
        """The ids this result hands back (for a trace), in the order shown."""
        return []


# ------------------------------------------------------------------------------------------ shared parts
class NodeRef(ToolResult):
    """A node of the hierarchy as a tool lists it: its type, id and a short human label."""

    type: str
    id: str
    label: str
    weight: float | None = None


class FactNote(ToolResult):
    """A claim a message makes with its fact's status at the times asked (`memory_query.facts.FactNote`)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    claim_id: str
    subject: str
    attribute: str
    value: str
    status: str = Field(description="current / superseded / ended / disputed / not_yet / ...")
    valid_from: datetime
    valid_until: datetime | None = None
    state_key: str | None = None
    superseded_by: dict[str, Any] | None = Field(
        default=None, description="{value, message_id, cite, state_key} of what replaced it"
    )
    reason: str = ""
    asked: bool = Field(default=False, description="the fact the question is about")


# ------------------------------------------------------------------------------------------ smart_search
class SearchFact(ToolResult):
    attribute: str
    value: str
    status: str


class SearchHit(ToolResult):
    id: str
    cite: str
    author: str
    time: datetime
    conversation_id: str
    snippet: str
    score: float
    paths: list[str]
    facts: list[SearchFact] = Field(
        default_factory=list, description="the facts it states that the query asks about, with their status"
    )
    matched_component: str | None = Field(
        default=None, description="the query part that found it (OR fallback)"
    )


class ConceptRef(ToolResult):
    id: str
    cite: str
    title: str


class TopicRef(ToolResult):
    id: str
    label: str


class SmartSearchResult(ToolResult):
    query: str
    results: list[SearchHit]
    concepts: list[ConceptRef] = Field(default_factory=list)
    topics: list[TopicRef] = Field(default_factory=list)
    fallback_components: list[str] = Field(default_factory=list)

    def returned_ids(self) -> list[str]:
        return [r.id for r in self.results] + [c.id for c in self.concepts]


# ------------------------------------------------------------------------------------------ explore_node
class RelationSummary(ToolResult):
    count: int
    first: list[NodeRef]


class ExploreNodeResult(ToolResult):
    id: str
    type: str
    summary: str
    relations: dict[str, RelationSummary]

    def returned_ids(self) -> list[str]:
        return [r.id for rel in self.relations.values() for r in rel.first]


# ------------------------------------------------------------------------------------------ lens
class LensPath(ToolResult):
    items: list[NodeRef]
    total: int
    more: str | None = Field(default=None, description="what was left out past the cap, and what to do")


class LensResult(ToolResult):
    id: str
    type: str
    paths: dict[str, LensPath]

    @computed_field(description="every id reached, path by path")
    @property
    def ids(self) -> list[str]:
        return [i.id for p in self.paths.values() for i in p.items]

    def returned_ids(self) -> list[str]:
        return self.ids


# ------------------------------------------------------------------------------------------ read_source_message
class SourceMessage(ToolResult):
    id: str
    cite: str
    author: str
    role: str
    time: datetime
    time_derived: bool
    conversation_id: str
    conversation_ref: str | None
    source_ref: str
    text: str
    truncated: bool
    chars: int
    before: list[NodeRef]
    after: list[NodeRef]

    def returned_ids(self) -> list[str]:
        return [self.id, *(r.id for r in self.before + self.after)]


# ------------------------------------------------------------------------------------------ facts
class FactEvidence(ToolResult):
    cite: str | None
    text: str
    said_at: datetime


class Replacement(ToolResult):
    value: str | None
    state_key: str | None
    cite: str | None = Field(description="the message that closed the state; None when outside the scope")


class FactStateView(ToolResult):
    fact_state_id: str
    state_key: str | None
    value: str
    status: str
    valid_from: datetime
    valid_until: datetime | None
    recorded_at: datetime
    superseded_at: datetime | None
    superseded_by: Replacement | None
    conflicts_with: list[str]
    decided_by: str | None
    rationale: str
    concept: str | None = Field(description="[Concept:<id>] of the claim that opened the state")
    evidence: list[FactEvidence]


class NotInHistory(ToolResult):
    value: str
    status: str
    reason: str
    cite: str | None


class FactHistory(ToolResult):
    subject: str
    subject_key: str | None = Field(default=None, description="the subject as memory keys it")
    slot: str
    states: list[FactStateView] = Field(description="every state in valid-time order")
    current: str | None = Field(description="the value current at the time asked")
    not_in_history: list[NotInHistory] = Field(
        description="claims in no state (stale, rejected, ...) and why"
    )


class FactsResult(ToolResult):
    facts: list[FactHistory]
    total: int
    more: str | None = None

    @computed_field(description="the fact state ids shown")
    @property
    def ids(self) -> list[str]:
        return [s.fact_state_id for g in self.facts for s in g.states]

    def returned_ids(self) -> list[str]:
        return self.ids


# ------------------------------------------------------------------------------------------ submit_evidence
class EvidenceSubmission(ToolResult):
    claim: str
    accepted: list[str]
    rejected: list[str]

    @computed_field(description="the accepted messages as citations")
    @property
    def citations(self) -> list[str]:
        return [f"[Source:{m}]" for m in self.accepted]

    def returned_ids(self) -> list[str]:
        return list(self.accepted)


# ------------------------------------------------------------------------------------------ query_memory
class EvidenceOut(ToolResult):
    cite: str
    message_id: str
    conversation_id: str
    author: str
    role: str
    time: datetime
    conversation_ref: str
    source_ref: str
    text: str
    span: list[int] = Field(description="[start, end] of `text` in the message")
    score: float
    paths: list[str]
    fact_status: str | None = Field(
        default=None,
        description="the fact the question is about: current / superseded / ended / disputed ...",
    )
    valid_from: datetime | None = None
    valid_until: datetime | None = None
    superseded_by: str | None = Field(default=None, description="the message that replaced the fact")
    on_active_branch: bool = True
    facts: list[FactNote] = Field(default_factory=list, description="every fact the message states")


class ConceptOut(ToolResult):
    id: str
    cite: str
    title: str
    type: str
    description: str
    evidence: list[str] = Field(description="citations of its evidence messages")


class QueryMemoryResult(ToolResult):
    corpus: str
    question: str
    evidence: list[EvidenceOut]
    concepts: list[ConceptOut] = Field(description="concepts with their evidence citations")
    context: str = Field(description="the XML evidence blocks to reason over")
    paths_available: dict[str, bool]

    def returned_ids(self) -> list[str]:
        return [e.message_id for e in self.evidence] + [c.id for c in self.concepts]

    @classmethod
    def of(cls, answer) -> QueryMemoryResult:
        """From a `memory_query.evidence.MemoryAnswer`."""
        evidence = []
        for i in answer.items:
            fact = i.fact or {}
            evidence.append(
                EvidenceOut(
                    cite=i.citation,
                    message_id=i.message_id,
                    conversation_id=i.conversation_id,
                    author=i.author,
                    role=i.role,
                    time=i.created_at,
                    conversation_ref=i.conversation_ref,
                    source_ref=i.source_ref,
                    text=i.text,
                    span=[i.span_start, i.span_end],
                    score=round(i.score, 4),
                    paths=i.paths,
                    fact_status=fact.get("status"),
                    valid_from=fact.get("valid_from"),
                    valid_until=fact.get("valid_until"),
                    superseded_by=(fact.get("superseded_by") or {}).get("cite"),
                    on_active_branch=i.on_active_branch,
                    facts=[FactNote.model_validate(f) for f in i.facts],
                )
            )
        concepts = [
            ConceptOut(
                id=c.concept_id,
                cite=c.citation,
                title=c.title,
                type=c.type,
                description=c.description,
                evidence=[f"[Source:{m}]" for m in c.evidence_message_ids],
            )
            for c in answer.concepts
        ]
        return cls(
            corpus=answer.corpus,
            question=answer.question,
            evidence=evidence,
            concepts=concepts,
            context=answer.context,
            paths_available=answer.paths_available,
        )


# ------------------------------------------------------------------------------------------ ask_memory
class AskEvidenceOut(ToolResult):
    cite: str
    message_id: str
    conversation_id: str
    author: str
    time: datetime
    conversation_ref: str
    source_ref: str
    quote: str = Field(description="the span of the message that answers")
    span: list[int]
    why: str = Field(description="how the Scout found it")


class AskStep(ToolResult):
    model_config = ConfigDict(frozen=True, extra="ignore")

    n: int
    role: str = Field(description="planner | scout | synthesizer")
    tool: str
    arguments: dict[str, Any]
    ids: list[str]
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    note: str = ""


class AskMemoryResult(ToolResult):
    corpus: str
    question: str
    answer: str = Field(description="every sentence cited [Source:<id>] / [Concept:<id>], or an abstention")
    abstained: bool
    gaps: list[str] = Field(description="what the evidence does not say")
    evidence: list[AskEvidenceOut]
    steps: list[AskStep] = Field(description="the trace: role, tool, arguments, ids, tokens, latency")
    driver: str

    def returned_ids(self) -> list[str]:
        return [e.message_id for e in self.evidence]

    @classmethod
    def of(cls, answer) -> AskMemoryResult:
        """From a `memory_query.agent.AgentAnswer`."""
        return cls(
            corpus=answer.corpus,
            question=answer.question,
            answer=answer.answer,
            abstained=answer.abstained,
            gaps=answer.gaps,
            evidence=[
                AskEvidenceOut(
                    cite=e.citation,
                    message_id=e.message_id,
                    conversation_id=e.conversation_id,
                    author=e.author,
                    time=e.created_at,
                    conversation_ref=e.conversation_ref,
                    source_ref=e.source_ref,
                    quote=e.quote,
                    span=[e.span_start, e.span_end],
                    why=e.why,
                )
                for e in answer.evidence
            ],
            steps=[AskStep.model_validate(s.as_dict()) for s in answer.steps],
            driver=answer.driver,
        )


class CitationCheck(ToolResult):
    valid: bool
    sentences: int
    uncited: list[str]
    unresolved: list[str]

"""The one interface both drivers implement: the three roles of the loop.

- `plan`: question + its date → a `Plan` (the Planner);
- `scout`: the loop's state → the next tool call (`ScoutAction`), ending with `submit_evidence` (the Scout);
- `synthesize`: the submitted evidence → a `Draft` answer with inline citations and its reasoning (the
  Synthesizer); `feedback` says what the citation check rejected last time.

Each decision comes back as a `RoleCall` with what it cost; an LLM driver also hands over its call's
`StructuredResult`, which the loop accounts in the corpus's `llm_calls`.

The loop (`memory_query.agent.loop`) owns everything else — executing tool calls through the scoped tools,
remembering strategies, budgets, traces, the citation check — so the offline driver (rules) and the LLM
driver (prompts with strict response models) differ only in how they decide.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from datetime import datetime
from typing import Generic, TypeVar

from memory_core.llm.base import StructuredResult
from memory_query.agent.findings import Candidate, Evidence
from memory_query.agent.plan import Plan
from memory_query.agent.trace import Spend

T = TypeVar("T")
SCOUT_TOOLS = ("smart_search", "lens", "explore_node", "read_source_message", "submit_evidence")


@dataclass
class RoleCall(Generic[T]):
    """A role's decision and what it cost (LLM tokens; the offline driver spends none)."""

    value: T
    tokens_in: int = 0
    tokens_out: int = 0
    note: str = ""
    llm_result: StructuredResult | None = None  # the LLM call behind it, for `llm_calls`


@dataclass
class ScoutAction:
    tool: str  # one of SCOUT_TOOLS
    arguments: dict  # JSON-friendly: times as ISO strings (smart_search: query, k, since, until)
    sub: int = 0  # the sub-question it serves (-1: the plan's event anchor)
    label: str = "search"  # the strategy, as a person would say it
    reason: str = ""
    cut_short: bool = False  # a submission made because the steps ran out while more was planned


@dataclass
class Observation:
    """What one executed step returned, as the Scout reads it next time."""

    action: ScoutAction
    outcome: str  # ok | failed | error | refused
    summary: str  # a line for the trace and the LLM Scout's context
    candidates: list[Candidate] = field(default_factory=list)


@dataclass
class Draft:
    answer: str  # sentences, each with [Source:<id>] or [Concept:<id>] citations
    reasoning: str
    abstained: bool
    gaps: list[str] = field(default_factory=list)  # what the evidence does not say (not claims: uncited)


@dataclass
class AgentState:
    question: str
    asked_at: datetime
    plan: Plan
    spend: Spend
    observations: list[Observation] = field(default_factory=list)
    candidates: list[Candidate] = field(default_factory=list)
    must_submit: bool = False  # the last Scout step: submit what was found
    as_of: datetime | None = None  # memory as it stood then (every search is bounded by it)
    #: further keyword arguments of the read side's view, passed to every search (the revision layer's
    #: `believed_at` / current-facts view joins here without the loop changing)
    view: dict = field(default_factory=dict)

    def seen(self, message_id: str) -> bool:
        return any(c.message_id == message_id for c in self.candidates)


class AgentDriver(ABC):
    name: str
    #: Synthesizer calls the budget keeps for this driver: a retry with the rejection's reasons can change an
    #: LLM's draft; an extractive one would repeat itself, so its Scout may spend that step instead
    synthesis_attempts: int = 1

    @abstractmethod
    def plan(self, question: str, asked_at: datetime) -> RoleCall[Plan]:
        """The Planner: the first plan."""

    @abstractmethod
    def scout(self, state: AgentState) -> RoleCall[ScoutAction]:
        """The Scout: the next tool call (`submit_evidence` when `state.must_submit`)."""

    @abstractmethod
    def synthesize(
        self, state: AgentState, evidence: list[Evidence], concepts: list[dict], feedback: str
    ) -> RoleCall[Draft]:
        """The Synthesizer: an answer from `evidence` (and the `concepts` it is evidence for) only, every
        sentence cited, or an abstention; `feedback` says why the last draft was rejected."""

    def describe(self) -> dict:
        return {"driver": self.name}

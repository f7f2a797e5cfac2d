"""Budgets and traces of one question's loop.

Every step — the Planner's plan, each Scout tool call, the Synthesizer's answer (and a retry) — is recorded
with its role, tool, arguments, the ids it returned, the LLM tokens it spent and its latency, returned with
the answer and appended to the corpus's agent trace (`<corpus>/traces/agent_trace.jsonl`, one line per
question). The step cap counts every step of every role: the seed's figure to hold is 4–6 steps per
question, where an unplanned agent took 22 and more.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field

from memory_core.store.db import CorpusStore, utcnow

TRACE_FILE = ("traces", "agent_trace.jsonl")
_WRITE_LOCK = threading.Lock()


@dataclass(frozen=True)
class AgentBudget:
    max_steps: int = 6  # every role's steps together (Planner 1, Scout the rest, Synthesizer 1 or 2)
    max_tokens: int = 30_000  # LLM tokens (in + out) over the question; the offline driver spends none
    max_evidence: int = 10  # messages the Scout submits (the Synthesizer's whole world)

    def __post_init__(self) -> None:
        if self.max_steps < 3:
            raise ValueError("max_steps must leave a step for each role (at least 3)")

    def scout_steps(self, synthesis_attempts: int = 1) -> int:
        """The Scout's share: what the Planner and the Synthesizer's attempts leave, at least its submission."""
        return max(1, self.max_steps - 1 - synthesis_attempts)


@dataclass
class AgentStep:
    n: int
    role: str  # planner | scout | synthesizer
    tool: str  # plan | smart_search | lens | explore_node | read_source_message | submit_evidence | answer
    arguments: dict
    ids: list[str]  # the ids the step returned (messages, concepts, nodes)
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    note: str = ""  # what the step concluded ("failed: no result holds 'bike'", "forced: step cap")

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Spend:
    """What the loop has spent so far, against its budget."""

    budget: AgentBudget
    synthesis_attempts: int = 1  # Synthesizer steps kept out of the Scout's share (the driver's)
    steps: list[AgentStep] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(s.tokens_in + s.tokens_out for s in self.steps)

    def scout_steps(self) -> int:
        return sum(1 for s in self.steps if s.role == "scout")

    def scout_steps_left(self) -> int:
        return self.budget.scout_steps(self.synthesis_attempts) - self.scout_steps()

    def steps_left(self) -> int:
        return self.budget.max_steps - len(self.steps)

    def tokens_exhausted(self) -> bool:
        return self.tokens >= self.budget.max_tokens

    def add(self, role: str, tool: str, arguments: dict, ids: list[str], **usage) -> AgentStep:
        step = AgentStep(len(self.steps) + 1, role, tool, arguments, list(ids), **usage)
        self.steps.append(step)
        return step


def append_trace(store: CorpusStore, record: dict) -> None:
    """One question's loop as one line of the corpus's agent trace."""
    path = store.path(*TRACE_FILE)
    line = json.dumps({"at": utcnow().isoformat(), "kind": "ask", **record}, default=str)
    with _WRITE_LOCK, path.open("a", encoding="utf-8") as fp:
        fp.write(line + "\n")

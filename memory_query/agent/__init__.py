"""Agentic inference over memory (docs/architecture.md §7): a stateful Planner → Scout → Synthesizer loop.

The Planner turns a question into a plan and keeps it across the loop (sub-questions, the time range its
date implies, entry concepts and topics, the strategies that failed); the Scout works only through the
scoped agent tools and exits through `submit_evidence`; the Synthesizer answers from the submitted evidence
alone, every sentence cited, or abstains. Two drivers behind one interface (`AgentDriver`): the offline
driver (rules, the default) and the LLM driver (each role a prompt with its strict response model). Every
step is traced and bounded (`AgentBudget`). Users reach it as `memory_query.api.ask`.
"""

from memory_query.agent.driver import AgentDriver
from memory_query.agent.loop import AgentAnswer, AgentLoop
from memory_query.agent.offline import OfflineDriver
from memory_query.agent.trace import AgentBudget, AgentStep

__all__ = ["AgentAnswer", "AgentBudget", "AgentDriver", "AgentLoop", "AgentStep", "OfflineDriver"]

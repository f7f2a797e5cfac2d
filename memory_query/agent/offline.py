"""The offline driver (the default: no key, no server): rule-based planning (decomposition, date ranges),
the same Scout tools chosen by an agenda, and the extractive Synthesizer that abstains below a threshold."""

from __future__ import annotations

from datetime import datetime

from memory_query.agent.driver import AgentDriver, AgentState, Draft, RoleCall, ScoutAction
from memory_query.agent.findings import Evidence
from memory_query.agent.plan import Plan
from memory_query.agent.planner import make_plan
from memory_query.agent.scout import OfflineScout
from memory_query.agent.synthesizer import OfflineSynthesizer


class OfflineDriver(AgentDriver):
    name = "offline"

    def __init__(self, scout: OfflineScout | None = None, synthesizer: OfflineSynthesizer | None = None):
        self._scout = scout or OfflineScout()
        self._synthesizer = synthesizer or OfflineSynthesizer()

    def plan(self, question: str, asked_at: datetime) -> RoleCall[Plan]:
        plan = make_plan(question, asked_at)
        return RoleCall(plan, note="; ".join(plan.notes) or plan.intent)

    def scout(self, state: AgentState) -> RoleCall[ScoutAction]:
        return RoleCall(self._scout.next_action(state))

    def synthesize(
        self, state: AgentState, evidence: list[Evidence], concepts: list[dict], feedback: str
    ) -> RoleCall[Draft]:
        return RoleCall(self._synthesizer.synthesize(state.plan, evidence, concepts))

    def describe(self) -> dict:
        return {
            "driver": self.name,
            "search_k": self._scout.k,
            "count_k": self._scout.count_k,
            "abstain_below": self._synthesizer.abstain_below,
        }

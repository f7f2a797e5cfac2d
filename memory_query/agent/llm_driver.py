"""The LLM driver: each role one strict structured call (`memory_query.agent.prompts`) through the project's
`LLMClient` — cached by (model, prompt, schema, input), retried with backoff, an invalid answer retried once
with the error fed back, costed (the loop writes every call to the corpus's `llm_calls`).

A call that still fails does not stop the question: that role's offline rules decide this once, and the
step's note says so. The LLM's tool calls are the Scout's strict `ScoutOut` answers; the loop executes them.
"""

from __future__ import annotations

from datetime import datetime

from memory_core.llm.base import LLMClient, StructuredResult
from memory_query.agent.driver import AgentDriver, AgentState, Draft, RoleCall, ScoutAction
from memory_query.agent.findings import Evidence
from memory_query.agent.offline import OfflineDriver
from memory_query.agent.plan import Plan, SubQuestion
from memory_query.agent.planner import make_plan
from memory_query.agent.prompts import PlanOut, ScoutOut, planner_request, scout_request, synthesizer_request
from memory_query.agent.scout import submission
from memory_query.agent.timeframe import EventAnchor, TimeRange


def _date(text: str, end: bool = False) -> datetime | None:
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if end and len(text.strip()) <= 10:
        when = when.replace(hour=23, minute=59, second=59)
    return when.replace(tzinfo=None)


def plan_from(out: PlanOut, question: str, asked_at: datetime) -> Plan:
    subs = [SubQuestion(s.text.strip(), s.label.strip() or f"part {i + 1}") for i, s in enumerate(out.sub_questions) if s.text.strip()]  # fmt: skip
    plan = Plan(question, asked_at, out.intent, subs or [SubQuestion(question, "main")])
    start, end = _date(out.time_range.start), _date(out.time_range.end, end=True)
    if start or end:
        plan.time_range = TimeRange(start, end, out.time_range.label or "the question's time range")
    if out.anchor_event.strip():
        relation = out.anchor_relation or "before"
        plan.anchor = EventAnchor(
            out.anchor_event.strip(), relation, f"{relation} {out.anchor_event.strip()}"
        )
    plan.order, plan.measure = out.order or None, out.measure or None
    plan.notes.append(out.reasoning)
    return plan


def action_from(out: ScoutOut, state: AgentState) -> ScoutAction:
    plan = state.plan
    labels = [s.label for s in plan.subs]
    sub = (
        labels.index(out.sub_question)
        if out.sub_question in labels
        else (-1 if out.sub_question == "anchor" else 0)
    )
    if out.tool == "smart_search":
        args: dict = {"query": out.query, "k": 10}
        label = "search"
        if out.in_time_range and plan.time_range is not None:
            r = plan.time_range
            args.update(
                {k: v.isoformat() for k, v in (("since", r.start), ("until", r.end)) if v is not None}
            )
            label = "search in range"
        return ScoutAction("smart_search", args, sub, label, out.reasoning)
    if out.tool == "lens":
        return ScoutAction("lens", {"node_id": out.node_id, "paths": out.paths, "max_ids": 10}, sub, "lens", out.reasoning)  # fmt: skip
    if out.tool == "explore_node":
        return ScoutAction("explore_node", {"node_id": out.node_id}, sub, "explore", out.reasoning)
    if out.tool == "read_source_message":
        return ScoutAction("read_source_message", {"message_id": out.message_id, "context": 1}, sub, "walk NEXT", out.reasoning)  # fmt: skip
    claim = out.claim or state.question
    return ScoutAction("submit_evidence", {"message_ids": out.message_ids, "claim": claim}, sub, "submit", out.reasoning)  # fmt: skip


def _usage(result: StructuredResult) -> dict:
    return {"tokens_in": result.tokens_in, "tokens_out": result.tokens_out, "llm_result": result}


def _failed(result: StructuredResult) -> str:
    return f"LLM call {result.outcome} ({result.error[:160]}): the offline rules decided this step"


class LLMDriver(AgentDriver):
    name = "llm"
    synthesis_attempts = 2  # a draft left with no cited sentence is retried once, inside the step cap

    def __init__(self, client: LLMClient):
        self.client = client
        self._offline = OfflineDriver()

    def describe(self) -> dict:
        return {"driver": self.name, **self.client.describe()}

    def plan(self, question: str, asked_at: datetime) -> RoleCall[Plan]:
        hint = make_plan(question, asked_at)
        result = self.client.structured(planner_request(question, asked_at, hint))
        if not result.ok:
            return RoleCall(hint, note=_failed(result), **_usage(result))
        plan = plan_from(result.parsed, question, asked_at)
        return RoleCall(plan, note=result.parsed.reasoning[:300], **_usage(result))

    def scout(self, state: AgentState) -> RoleCall[ScoutAction]:
        result = self.client.structured(scout_request(state))
        if not result.ok:
            fallback = (
                submission(state, state.spend.budget.max_evidence)
                if state.must_submit
                else self._offline.scout(state).value
            )
            return RoleCall(fallback, note=_failed(result), **_usage(result))
        return RoleCall(action_from(result.parsed, state), **_usage(result))

    def synthesize(
        self, state: AgentState, evidence: list[Evidence], concepts: list[dict], feedback: str
    ) -> RoleCall[Draft]:
        result = self.client.structured(synthesizer_request(state, evidence, concepts, feedback))
        if not result.ok:
            draft = self._offline.synthesize(state, evidence, concepts, feedback).value
            return RoleCall(draft, note=_failed(result), **_usage(result))
        out = result.parsed
        return RoleCall(Draft(out.answer, out.reasoning, out.abstain, list(out.gaps)), **_usage(result))

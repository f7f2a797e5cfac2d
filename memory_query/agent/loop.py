"""The agent loop: Planner → Scout (tool calls until `submit_evidence`) → Synthesizer, for either driver.

The loop, not the driver, executes every tool call through the scoped tools, refuses a strategy the Planner
already tried (the step still counts: a looping Scout runs into the step cap), forces the submission at the
Scout's last step or when the token cap is spent, reads the submitted messages into `Evidence`, checks the
draft's citations against exactly that evidence (an uncited sentence is dropped; a draft left with nothing
is retried once with the reasons, then the answer abstains), and records every step.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime

from memory_core.llm.accounting import call_row, record_calls
from memory_core.store.db import utcnow
from memory_query.agent.driver import AgentDriver, AgentState, Draft, Observation, ScoutAction
from memory_query.agent.execution import Observer, execute, returned_ids
from memory_query.agent.findings import Evidence, best_sentence, compose
from memory_query.agent.plan import Plan
from memory_query.agent.planner import content_tokens
from memory_query.agent.scout import strategy_of, submission
from memory_query.agent.synthesizer import ABSTENTION, enforce_citations
from memory_query.agent.trace import AgentBudget, AgentStep, Spend, append_trace
from memory_query.scoping import ScopedTools
from memory_query.tools import ToolError


@dataclass
class AgentAnswer:
    question: str
    corpus: str
    as_of: datetime | None
    asked_at: datetime
    answer: str  # cited sentences only (or the abstention)
    abstained: bool
    reasoning: str
    evidence: list[Evidence]
    concepts: list[dict]  # citable concepts: {"id", "title", "citation", "evidence"}
    gaps: list[str]  # what the evidence does not say
    dropped: list[dict]  # sentences the citation check removed, with why
    plan: Plan
    steps: list[AgentStep]
    driver: str
    stopped_by: str | None  # "steps" | "tokens" when a cap ended the search
    latency_ms: float
    #: the agent's ranking of messages: the submitted evidence, then the rest of what the Scout saw
    ranked_message_ids: list[str] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(s.tokens_in + s.tokens_out for s in self.steps)

    def as_dict(self) -> dict:
        return {
            "question": self.question,
            "corpus": self.corpus,
            "as_of": self.as_of.isoformat() if self.as_of else None,
            "asked_at": self.asked_at.isoformat(),
            "answer": self.answer,
            "abstained": self.abstained,
            "reasoning": self.reasoning,
            "gaps": self.gaps,
            "evidence": [e.as_dict() for e in self.evidence],
            "concepts": self.concepts,
            "dropped": self.dropped,
            "steps": [s.as_dict() for s in self.steps],
            "plan": self.plan.as_dict(),
            "driver": self.driver,
            "stopped_by": self.stopped_by,
            "tokens": self.tokens,
            "latency_ms": self.latency_ms,
        }


class AgentLoop:
    def __init__(
        self, driver: AgentDriver, tools: ScopedTools, budget: AgentBudget | None = None, trace: bool = True
    ):
        self.driver = driver
        self.tools = tools
        self.budget = budget or AgentBudget()
        self.trace = trace
        self.observer = Observer(tools)

    @property
    def reader(self):
        return self.tools.tools.reader

    def run(self, question: str, *, as_of: datetime | None = None, **view) -> AgentAnswer:
        """`question` as memory stood at `as_of` (its date: default now); `view`: further keyword options of
        every search (see `AgentState.view`)."""
        started = time.perf_counter()
        asked_at = as_of or utcnow()
        spend = Spend(self.budget, self.driver.synthesis_attempts)
        state = self._plan(question, asked_at, spend)
        state.as_of, state.view = as_of, view
        accepted, stopped_by = self._search(state)
        evidence, concepts = self._evidence(state, accepted)
        draft, dropped = self._synthesize(state, evidence, concepts)
        seen = [c.message_id for c in compose(state.candidates, state.plan.intent, len(state.plan.subs))]
        answer = AgentAnswer(
            question=question,
            corpus=self.reader.store.name,
            as_of=as_of,
            asked_at=asked_at,
            answer=draft.answer,
            abstained=draft.abstained,
            reasoning=draft.reasoning,
            evidence=evidence,
            concepts=concepts,
            gaps=draft.gaps,
            dropped=dropped,
            plan=state.plan,
            steps=spend.steps,
            driver=self.driver.name,
            stopped_by=stopped_by,
            latency_ms=round((time.perf_counter() - started) * 1000, 1),
            ranked_message_ids=list(dict.fromkeys([*accepted, *seen])),
        )
        if self.trace:
            append_trace(self.reader.store, _trace_record(answer))
        return answer

    def _account(self, call, role: str) -> None:
        """An LLM role's call as a row of the corpus's `llm_calls` (cache hits too, at zero cost)."""
        if call.llm_result is not None:
            record_calls(self.reader.store.staging, [call_row(call.llm_result, f"agent_{role}")])

    # ------------------------------------------------------------------------------------ Planner
    def _plan(self, question: str, asked_at: datetime, spend: Spend) -> AgentState:
        t0 = time.perf_counter()
        call = self.driver.plan(question, asked_at)
        call.value.participants = frozenset(self.reader.speakers())
        self._account(call, "planner")
        spend.add(
            "planner", "plan", {"question": question, "asked_at": asked_at.isoformat()}, [],
            tokens_in=call.tokens_in, tokens_out=call.tokens_out, latency_ms=_ms(t0), note=call.note,
        )  # fmt: skip
        return AgentState(question, asked_at, call.value, spend)

    # ------------------------------------------------------------------------------------ Scout
    def _search(self, state: AgentState) -> tuple[list[str], str | None]:
        """Scout steps until the submission; (accepted message ids, the cap that forced it or None)."""
        spend = state.spend
        while True:
            t0 = time.perf_counter()
            state.must_submit = spend.scout_steps_left() <= 1 or spend.tokens_exhausted()
            forced = None
            if spend.tokens_exhausted():
                action, usage, forced = submission(state, self.budget.max_evidence), {}, "tokens"
            else:
                call = self.driver.scout(state)
                self._account(call, "scout")
                action, usage = call.value, {"tokens_in": call.tokens_in, "tokens_out": call.tokens_out}
                if call.note:
                    action.reason = f"{action.reason} ({call.note})".strip()
                if state.must_submit and action.tool != "submit_evidence":
                    action, forced = submission(state, self.budget.max_evidence), "steps"
            if action.tool == "submit_evidence":
                forced = forced or ("steps" if action.cut_short else None)
                return self._submit(state, action, usage, t0, forced), forced
            self._step(state, action, usage, t0)

    def _step(self, state: AgentState, action: ScoutAction, usage: dict, t0: float) -> None:
        plan, strategy = state.plan, strategy_of(action)
        if plan.was_tried(strategy):
            outcome = next(o for s, o in plan.tried if s.key == strategy.key)
            note = f"refused: this strategy was already tried ({outcome}); try another or submit"
            state.observations.append(Observation(action, "refused", note))
            state.spend.add(
                "scout", action.tool, action.arguments, [], latency_ms=_ms(t0), note=note, **usage
            )
            return
        try:
            result = execute(self.tools, action, state.as_of, state.view)
        except (ToolError, KeyError, ValueError) as exc:  # a call the Scout must change
            plan.record(strategy, "error")
            note = f"error: {exc}"
            state.observations.append(Observation(action, "error", note))
            state.spend.add(
                "scout", action.tool, action.arguments, [], latency_ms=_ms(t0), note=note, **usage
            )
            return
        observation = self.observer.observe(state, action, result)
        plan.record(strategy, observation.outcome)
        state.observations.append(observation)
        state.candidates += [c for c in observation.candidates if not state.seen(c.message_id)]
        _mark_walks(state, observation.candidates)
        note = f"{observation.outcome}: {observation.summary}" + (
            f" — {action.reason}" if action.reason else ""
        )
        ids = returned_ids(action.tool, result)
        state.spend.add("scout", action.tool, action.arguments, ids, latency_ms=_ms(t0), note=note, **usage)

    def _submit(
        self, state: AgentState, action: ScoutAction, usage: dict, t0: float, forced: str | None
    ) -> list[str]:
        ids = [str(m) for m in action.arguments.get("message_ids", [])][: self.budget.max_evidence]
        claim = str(action.arguments.get("claim") or state.question)
        result = self.tools.submit_evidence(ids, claim)
        note = f"{len(result.accepted)} accepted, {len(result.rejected)} rejected"
        if forced:
            note = f"forced: {'step' if forced == 'steps' else 'token'} cap reached; " + note
        args = {"message_ids": ids, "claim": claim}
        state.spend.add(
            "scout", "submit_evidence", args, result.accepted, latency_ms=_ms(t0), note=note, **usage
        )
        return list(result.accepted)

    # ------------------------------------------------------------------------------------ evidence
    def _evidence(self, state: AgentState, accepted: list[str]) -> tuple[list[Evidence], list[dict]]:
        """The submitted messages as the Synthesizer reads them, and the concepts they are evidence for."""
        table = self.reader.messages()
        texts = self.reader.message_texts(accepted)
        plan = state.plan
        by_id = {c.message_id: c for c in state.candidates}
        concepts = self._concepts(state, set(accepted))
        out = []
        for mid in accepted:
            i = table.index.get(mid)
            if i is None or mid not in texts:
                continue
            found = by_id.get(mid)
            sub = max(found.sub, 0) if found else 0
            text = texts[mid][0]
            start, end, match = best_sentence(text, set(content_tokens(plan.subs[sub].text)))
            out.append(
                Evidence(
                    message_id=mid,
                    conversation_id=table.conv_ids[table.conversation[i]],
                    conversation_ref=table.conv_refs[table.conversation[i]],
                    source_ref=table.source_ref[i],
                    author=table.author[i],
                    role=str(table.role[i]),
                    created_at=table.created_at[i].astype("datetime64[us]").astype(datetime),
                    text=text,
                    span_start=start,
                    span_end=end,
                    match=round(match, 3),
                    sub=sub,
                    sub_label=plan.subs[sub].label,
                    why=found.why if found else "submitted by the Scout",
                    concept_ids=[c["id"] for c in concepts if mid in c["evidence"]],
                    replaced=found.replaced if found else False,
                )
            )
        return out, concepts

    def _concepts(self, state: AgentState, accepted: set[str]) -> list[dict]:
        catalog = self.tools.tools.catalog
        out = []
        for c in state.plan.entry_concepts:
            evidence = [m for m, _ in catalog.neighbour_ids("Concept>Message", c["id"]) if m in accepted]
            if evidence:
                out.append({"id": c["id"], "title": c["title"], "citation": f"[Concept:{c['id']}]", "evidence": evidence})  # fmt: skip
        return out

    # ------------------------------------------------------------------------------------ Synthesizer
    def _synthesize(
        self, state: AgentState, evidence: list[Evidence], concepts: list[dict]
    ) -> tuple[Draft, list[dict]]:
        spend = state.spend
        if not evidence:
            spend.add("synthesizer", "answer", {"evidence": []}, [], note="no evidence submitted: abstained without a call")  # fmt: skip
            return Draft(ABSTENTION, "the Scout submitted no evidence", True, [state.question]), []
        known = {e.citation for e in evidence} | {c["citation"] for c in concepts}
        feedback, dropped = "", []
        while True:
            t0 = time.perf_counter()
            call = self.driver.synthesize(state, evidence, concepts, feedback)
            self._account(call, "synthesizer")
            draft = call.value
            kept, rejected = ("", []) if draft.abstained else enforce_citations(draft.answer, known)
            dropped += rejected
            cited = sorted({c for c in known if c in kept})
            note = call.note or ("abstained" if draft.abstained else f"{len(rejected)} sentence(s) dropped by the citation check")  # fmt: skip
            spend.add(
                "synthesizer", "answer", {"evidence": [e.message_id for e in evidence], "retry": bool(feedback)},
                cited, tokens_in=call.tokens_in, tokens_out=call.tokens_out, latency_ms=_ms(t0), note=note,
            )  # fmt: skip
            if draft.abstained:
                return Draft(ABSTENTION, draft.reasoning, True, draft.gaps or [state.question]), dropped
            if kept:
                return Draft(kept, draft.reasoning, False, draft.gaps), dropped
            if feedback or spend.steps_left() <= 0 or spend.tokens_exhausted():
                reason = "no sentence of the draft cited the evidence it was given"
                return Draft(ABSTENTION, reason, True, [state.question]), dropped
            feedback = "Every sentence was rejected: " + "; ".join(
                f"{d['sentence']!r} {d['why']}" for d in rejected
            )


def _mark_walks(state: AgentState, found: list) -> None:
    """A message a search already found and a walk then reached (the reply after a question, a concept's
    evidence) keeps the walk as why it was taken: that is what it is to the answer."""
    walked = {c.message_id: c.how for c in found if c.how.startswith(("NEXT after", "EVIDENCE_FOR"))}
    for c in state.candidates:
        if c.message_id in walked and not c.how:
            c.how, c.grounded = walked[c.message_id], True


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 2)


def _trace_record(answer: AgentAnswer) -> dict:
    return {
        "ask_id": uuid.uuid4().hex,
        "question": answer.question,
        "as_of": answer.as_of,
        "driver": answer.driver,
        "intent": answer.plan.intent,
        "answer": answer.answer,
        "abstained": answer.abstained,
        "evidence": [e.message_id for e in answer.evidence],
        "stopped_by": answer.stopped_by,
        "latency_ms": answer.latency_ms,
        "steps": [s.as_dict() for s in answer.steps],
    }

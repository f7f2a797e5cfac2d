"""The LLM driver's prompts, each a function paired with its strict response model (SGR: every field
required, `extra="forbid"`, empty means "" or []).

- Planner: `planner_request` → `PlanOut` (intent, sub-questions, time range, order, measure, event anchor);
- Scout: `scout_request` → `ScoutOut` (its reasoning and the next tool call): the endpoint's own tool calls
  where it has them (one strict function per agent tool), else one flat strict model whose unused arguments
  are empty, valid on any endpoint with strict structured outputs;
- Synthesizer: `synthesizer_request` → `SynthesisOut` (an explicit reasoning field, the cited answer, an
  abstention flag and what the evidence does not say).
"""

from __future__ import annotations

from typing import Literal

from memory_core.llm.base import StructuredRequest
from memory_core.ontology.strict import StrictBase
from memory_query.agent.driver import AgentState
from memory_query.agent.findings import Evidence, compose
from memory_query.agent.plan import Plan

EVIDENCE_CHARS = 1500  # of each evidence message shown to the Synthesizer
CANDIDATES_SHOWN = 15  # candidates listed to the Scout


class SubQuestionOut(StrictBase):
    label: str
    text: str


class TimeRangeOut(StrictBase):
    start: str  # ISO date or ""
    end: str
    label: str


class PlanOut(StrictBase):
    reasoning: str
    intent: Literal["lookup", "comparison", "count", "multi_part"]
    sub_questions: list[SubQuestionOut]
    time_range: TimeRangeOut
    order: Literal["first", "last", ""]
    measure: Literal["days", "weeks", "months", "years", "hours", "age", ""]
    anchor_event: str  # an event to date first ("I moved"), or ""
    anchor_relation: Literal["before", "after", "since", "until", ""]


class SmartSearchCall(StrictBase):
    """Messages matching a query, best first; in_time_range: only inside the plan's time range."""

    reasoning: str
    sub_question: str  # the label of the sub-question this call serves
    query: str
    in_time_range: bool


class LensCall(StrictBase):
    """Follow relation paths from a node, e.g. a concept's evidence ["Concept>Message"], a topic's
    ["Topic>Segment>Message"]."""

    reasoning: str
    sub_question: str
    node_id: str
    paths: list[str]


class ExploreNodeCall(StrictBase):
    """A node's summary and its neighbours per relation."""

    reasoning: str
    sub_question: str
    node_id: str


class ReadSourceMessageCall(StrictBase):
    """A message's full text and the messages before and after it (NEXT)."""

    reasoning: str
    sub_question: str
    message_id: str


class SubmitEvidenceCall(StrictBase):
    """The exit: the message ids that answer, best first, and what they support."""

    reasoning: str
    message_ids: list[str]
    claim: str


SCOUT_TOOL_CALLS: tuple[tuple[str, type[StrictBase]], ...] = (
    ("smart_search", SmartSearchCall),
    ("lens", LensCall),
    ("explore_node", ExploreNodeCall),
    ("read_source_message", ReadSourceMessageCall),
    ("submit_evidence", SubmitEvidenceCall),
)


class ScoutOut(StrictBase):
    """The Scout's next call: as a strict response (one flat model, unused arguments empty) on any endpoint,
    or built from the endpoint's own tool call where it has them (`from_tool_call`)."""

    reasoning: str
    tool: Literal["smart_search", "lens", "explore_node", "read_source_message", "submit_evidence"]
    sub_question: str  # the label of the sub-question this call serves
    query: str  # smart_search
    in_time_range: bool  # smart_search: only inside the plan's time range
    node_id: str  # lens, explore_node
    paths: list[str]  # lens, e.g. ["Concept>Message"]
    message_id: str  # read_source_message
    message_ids: list[str]  # submit_evidence, best first
    claim: str  # submit_evidence: what the evidence supports

    @classmethod
    def from_tool_call(cls, name: str, arguments: StrictBase) -> ScoutOut:
        empty = {
            "reasoning": "",
            "sub_question": "",
            "query": "",
            "in_time_range": False,
            "node_id": "",
            "paths": [],
            "message_id": "",
            "message_ids": [],
            "claim": "",
        }
        return cls(tool=name, **{**empty, **arguments.model_dump()})


class SynthesisOut(StrictBase):
    reasoning: str
    answer: str  # sentences, each ending with its citations
    abstain: bool
    gaps: list[str]


_PLANNER = """You are the Planner of a memory system that answers questions about a person's past conversations.
Turn the question into a short search plan. Rules:
- comparison ("which did I do first, A or B?", "how many days between A and B", "how many months before A did B"):
  one sub-question per event, each searchable on its own; order "first" or "last" when asked;
- count ("how many X", "how much in total", "list all"): intent count, the sub-question names what is counted;
  the evidence is spread over many conversations;
- several questions in one: intent multi_part, one sub-question each; otherwise intent lookup.
- time_range: the dates the question's words imply, read against the question date ("last month", "in March",
  "two weeks ago"), as ISO dates, generous by a few days; empty strings when it names none. A question asking
  for an amount of time ("how many weeks ago did I…") names no range: set measure instead.
- anchor_event: an event that must be dated first to set the range ("before I moved" → "I moved"), else "".
Sub-question texts are search queries: the words a message about it would contain."""

_SCOUT = """You are the Scout of a memory system. You find the messages that answer the plan's sub-questions, using only
these tools, one call per turn:
- smart_search(query, in_time_range): messages matching a query (in_time_range: only inside the plan's range);
- lens(node_id, paths): follow relations from a node, e.g. a concept's evidence ["Concept>Message"], a topic's
  ["Topic>Segment>Message"];
- explore_node(node_id): a node's summary and neighbours;
- read_source_message(message_id): a message's full text and the messages before and after it (NEXT);
- submit_evidence(message_ids, claim): your exit — the message ids that answer, best first.
Never repeat a call that was already made (they are listed with their outcome). Submit as soon as every
sub-question has evidence; when the steps left are 1, you must submit. Fill only the fields of the tool you
call; leave the others empty."""

_SYNTHESIZER = """You are the Synthesizer of a memory system: you answer only from the evidence given, never from
anything else. Every sentence of the answer ends with at least one citation copied from the evidence list,
[Source:<id>] or [Concept:<id>]; a sentence without one will be deleted. You may deduce (use the reasoning
field): compare dates ("mid-February" is before "Feb 27"), count items across conversations, compute days
between dates relative to the question date. If the evidence does not answer the question, set abstain to
true and say what is missing in gaps. Be brief."""


def _plan_text(plan: Plan) -> str:
    lines = [f"intent: {plan.intent}"]
    lines += [f"sub-question {s.label}: {s.text}" for s in plan.subs]
    if plan.time_range:
        r = plan.time_range
        lines.append(f"time range: {r.label} ({r.start:%Y-%m-%d} to {r.end:%Y-%m-%d})" if r.start and r.end else f"time range: {r.label}")  # fmt: skip
    if plan.anchor:
        lines.append(f"event to date first: {plan.anchor.event} ({plan.anchor.relation})")
    if plan.order:
        lines.append(f"order asked: {plan.order}")
    if plan.measure:
        lines.append(f"measure asked: {plan.measure}")
    return "\n".join(lines)


def planner_request(question: str, asked_at, hint: Plan) -> StructuredRequest[PlanOut]:
    user = (
        f"Question date: {asked_at:%Y-%m-%d (%a) %H:%M}\nQuestion: {question}\n\n"
        f"A rule-based reading of the question, for reference (correct it where it is wrong):\n{_plan_text(hint)}"
    )
    return StructuredRequest("agent.planner/v1", _PLANNER, user, PlanOut)


def scout_request(state: AgentState) -> StructuredRequest[ScoutOut]:
    plan = state.plan
    tried = [
        f"- {s.tool} {s.arguments()} for {plan.as_dict()['tried'][i]['for']}: {outcome}"
        for i, (s, outcome) in enumerate(plan.tried)
    ]
    found = [
        f"- {c.message_id} ({c.time:%Y-%m-%d}, for {plan.subs[max(c.sub, 0)].label}{'' if c.grounded else ', no query word'}): {c.snippet}"  # fmt: skip
        for c in compose(state.candidates, plan.intent, len(plan.subs))[:CANDIDATES_SHOWN]
    ]
    entries = [f"- concept {c['id']}: {c['title']}" for c in plan.entry_concepts] + [
        f"- topic {t['id']}: {t['label']}" for t in plan.entry_topics
    ]
    refused = [o.summary for o in state.observations if o.outcome in ("refused", "error")][-3:]
    user = "\n".join(
        [
            f"Question date: {state.asked_at:%Y-%m-%d}\nQuestion: {state.question}\n",
            f"Plan:\n{_plan_text(plan)}\n",
            "Calls made so far (do not repeat them):\n" + ("\n".join(tried) or "- none"),
            "\nMessages found so far (best first):\n" + ("\n".join(found) or "- none"),
            "\nConcepts and topics to enter by:\n" + ("\n".join(entries) or "- none"),
            *(["\nProblems with the last calls:\n" + "\n".join(refused)] if refused else []),
            f"\nSteps left: {state.spend.scout_steps_left()}"
            + (" — this is the last one: call submit_evidence now." if state.must_submit else ""),
        ]
    )
    return StructuredRequest("agent.scout/v1", _SCOUT, user, ScoutOut, tools=SCOUT_TOOL_CALLS)


def synthesizer_request(
    state: AgentState, evidence: list[Evidence], concepts: list[dict], feedback: str
) -> StructuredRequest[SynthesisOut]:
    items = []
    for e in sorted(evidence, key=lambda e: e.created_at):
        text = " ".join(e.text.split())
        text = text if len(text) <= EVIDENCE_CHARS else text[:EVIDENCE_CHARS] + " …"
        items.append(f"{e.citation} {e.author} on {e.created_at:%Y-%m-%d (%a)}, for {e.sub_label}: {text}")
    items += [f"{c['citation']} concept: {c['title']}" for c in concepts]
    user = (
        f"Question date: {state.asked_at:%Y-%m-%d (%a)}\nQuestion: {state.question}\n\nPlan:\n{_plan_text(state.plan)}\n\n"
        "Evidence (chronological):\n" + "\n".join(items)
    )
    if feedback:
        user += f"\n\nYour previous answer was rejected. {feedback}\nAnswer again: every sentence must end with a citation from the list."  # fmt: skip
    return StructuredRequest("agent.synthesizer/v1", _SYNTHESIZER, user, SynthesisOut)

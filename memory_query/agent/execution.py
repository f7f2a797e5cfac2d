"""Executing a Scout's tool call through the scoped agent tools, and reading what came back.

The Scout decides; this module runs the call on `ScopedTools` (so every id outside the allowed corpus and
sessions is gone before the Scout sees it), turns the returned messages into `Candidate`s, judges whether
the call found its sub-question's words at all (a call that did not is a failed strategy the Planner
remembers), and updates the Planner's state: entry concepts and topics, the event anchor's date.
"""

from __future__ import annotations

from datetime import datetime

from memory_core.lexical import tokenize
from memory_query.agent.driver import AgentState, Observation, ScoutAction
from memory_query.agent.findings import Candidate
from memory_query.agent.planner import content_tokens
from memory_query.facts import NOT_CURRENT
from memory_query.scoping import ScopedTools
from memory_query.tool_results import SmartSearchResult, ToolResult

DEFAULT_K = 10


def _when(value) -> datetime | None:
    if value in (None, ""):
        return None
    return value if isinstance(value, datetime) else datetime.fromisoformat(str(value))


def execute(
    tools: ScopedTools, action: ScoutAction, as_of: datetime | None, view: dict | None = None
) -> ToolResult:
    """Run one non-submit tool call (a search bounded by `as_of` and given the read `view`'s options);
    raises `ToolError` for a call the Scout must change."""
    a = action.arguments
    if action.tool == "smart_search":
        until, since = _when(a.get("until")), _when(a.get("since"))
        bound = min(t for t in (as_of, until) if t is not None) if (as_of or until) else None
        query, k = str(a.get("query", "")), int(a.get("k") or DEFAULT_K)
        return tools.smart_search(query, k, as_of=bound, since=since, **(view or {}))
    if action.tool == "lens":
        return tools.lens(str(a["node_id"]), list(a.get("paths") or []) or None, a.get("max_ids") or None)
    if action.tool == "explore_node":
        return tools.explore_node(str(a["node_id"]), a.get("node_type") or None)
    if action.tool == "read_source_message":
        return tools.read_source_message(str(a["message_id"]), int(a.get("context", 1)))
    raise ValueError(f"not a tool the Scout can call here: {action.tool!r}")


def returned_ids(tool: str, result: ToolResult) -> list[str]:
    """The ids a call returned, for the trace."""
    return result.returned_ids()


class Observer:
    """Reads tool results for one question's loop (the message table gives a returned message its time and
    conversation when the tool listed only its id)."""

    def __init__(self, tools: ScopedTools):
        self.table = tools.tools.reader.messages()

    def _meta(self, message_id: str) -> tuple[str, datetime] | None:
        i = self.table.index.get(message_id)
        if i is None:
            return None
        conv = self.table.conv_ids[self.table.conversation[i]]
        return conv, self.table.created_at[i].astype("datetime64[us]").astype(datetime)

    def observe(self, state: AgentState, action: ScoutAction, result: ToolResult) -> Observation:
        plan = state.plan
        text = plan.anchor.event if action.sub < 0 and plan.anchor else plan.subs[max(action.sub, 0)].text
        wanted = set(content_tokens(text)) or set(tokenize(text))
        found = self._candidates(action, result, wanted, state)
        grounded = [c for c in found if c.grounded]
        outcome = "ok" if grounded else "failed"
        for c in found:
            c.strategy_ok = outcome == "ok"
        if action.tool == "smart_search":
            self._entries(state, action, result, wanted)
        if action.sub < 0 and grounded and plan.anchor is not None:
            plan.time_range = plan.anchor.range_from(grounded[0].time, plan.asked_at)
            plan.notes.append(
                f"the event {plan.anchor.event!r} dated {grounded[0].time:%Y-%m-%d}: {plan.time_range.label}"
            )
        summary = (
            f"{len(found)} message(s), {len(grounded)} holding {' '.join(sorted(wanted))!r}"
            if found
            else "nothing returned"
        )
        return Observation(action, outcome, summary, found)

    def _candidates(
        self, action: ScoutAction, result: ToolResult, wanted: set[str], state: AgentState
    ) -> list[Candidate]:
        rows = self._rows(action, result, state)
        out = []
        replaced = _replaced(result) if action.tool == "smart_search" else set()
        for rank, (mid, snippet, score, paths, how, base) in enumerate(rows, 1):
            meta = self._meta(mid)
            if meta is None:
                continue
            conv, when = meta
            # the reply after a question that held the words answers it, and an entry concept's title held
            # them: what was walked to is grounded whatever the words of its own snippet
            grounded = bool(wanted & set(tokenize(snippet))) or how.startswith(("NEXT after", "EVIDENCE_FOR"))
            # a walked neighbour follows the message it was reached from, when it holds the question's words
            walked = base.rank + (0.5 if grounded else 1000) if base is not None else rank
            out.append(
                Candidate(
                    message_id=mid,
                    conversation_id=conv,
                    time=when,
                    snippet=snippet,
                    score=score,
                    paths=paths,
                    sub=base.sub if base is not None else action.sub,
                    strategy=base.strategy if base is not None else action.label,
                    rank=walked,
                    grounded=grounded,
                    how=how if how not in ("", "lens") else "",
                    replaced=mid in replaced,
                )
            )
        return out

    def _rows(self, action: ScoutAction, result, state: AgentState) -> list[tuple]:
        """(message id, snippet, score, paths, how, origin candidate) per message a call returned."""
        if action.tool == "smart_search":
            return [(r.id, r.snippet, r.score, r.paths, "", None) for r in result.results]
        if action.tool == "lens":
            node = action.arguments.get("node_id")
            return [
                (i.id, i.label, float(i.weight or 0.0), [], _walk(path, node), None)
                for path, p in result.paths.items()
                for i in p.items
                if i.type == "Message"
            ]
        if action.tool == "read_source_message":
            origin = next((c for c in state.candidates if c.message_id == result.id), None)
            rows = []
            for ref in result.after:  # NEXT: the reply that follows a question is where its answer is
                how = f"NEXT after [Source:{result.id}]"
                rows.append((ref.id, ref.label, 0.0, [], how, origin))
            return rows
        if action.tool == "explore_node":
            return [
                (r.id, r.label, 0.0, [], "lens", None)
                for rel in result.relations.values()
                for r in rel.first
                if r.type == "Message"
            ]
        return []

    @staticmethod
    def _entries(state: AgentState, action: ScoutAction, result: SmartSearchResult, wanted: set[str]) -> None:
        """Concepts and topics the search reached whose names share the sub-question's words: where the
        Scout can enter next (EVIDENCE_FOR from a concept, a topic's segments)."""
        plan = state.plan
        known = {c["id"] for c in plan.entry_concepts}
        for c in result.concepts:
            if c.id not in known and wanted & set(tokenize(c.title)):
                plan.entry_concepts.append({"id": c.id, "title": c.title, "for": action.sub})
        known = {t["id"] for t in plan.entry_topics}
        for t in result.topics:
            if t.id not in known and wanted & set(tokenize(t.label)):
                plan.entry_topics.append({"id": t.id, "label": t.label, "for": action.sub})


def _walk(path: str, node_id) -> str:
    """How a lens row was reached: a concept's evidence (EVIDENCE_FOR) names the concept."""
    return f"EVIDENCE_FOR [Concept:{node_id}]" if path == "Concept>Message" else "lens"


def _replaced(result: SmartSearchResult) -> set[str]:
    """Messages of a search result stating an asked fact that the view holds as no longer current (and none
    that is current): "I live in Portland" once "I live in Seattle now" replaced it."""
    out = set()
    for r in result.results:
        statuses = {f.status for f in r.facts}
        if statuses & set(NOT_CURRENT) and "current" not in statuses:
            out.add(r.id)
    return out

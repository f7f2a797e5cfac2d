"""The offline Scout: the next tool call from the plan and what the calls so far returned.

Its agenda, in order, skipping every strategy the Planner already tried:
1. date the event anchor ("before I moved": search "I moved");
2. one search per sub-question the answer is about (inside the plan's time range for a lookup or a count);
3. for a sub-question that found nothing holding its words: the search without the range, then the entry
   concepts the searches reached (EVIDENCE_FOR: `lens Concept>Message`), then an entry topic
   (`lens Topic>Segment>Message`), then its key words alone — a walk before a further search, so a
   comparison's failed part gets its walk inside the default 6 steps (Planner 1, Scout 4: part A, part B,
   the walk, the submission; Synthesizer 1);
3b. a comparison's whole question (context only: its words together find what a part's alone may miss);
4. complements: outside the range after a search inside it; a count's items searched apart;
5. a lookup whose best find is a question: walk NEXT to the reply (`read_source_message`);
then `submit_evidence` with the composed ranking (`findings.compose`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memory_core.lexical import tokenize
from memory_query.agent.driver import AgentState, ScoutAction
from memory_query.agent.findings import compose
from memory_query.agent.plan import Strategy
from memory_query.agent.planner import GENERIC

WINDOWED_INTENTS = ("lookup", "count", "multi_part")


def strategy_of(action: ScoutAction) -> Strategy:
    return Strategy.of(action.tool, action.arguments, action.sub, action.label)


def submission(state: AgentState, max_evidence: int, cut_short: bool = False) -> ScoutAction:
    """`submit_evidence` with what the Scout found, in the agent's ranking."""
    plan = state.plan
    ranked = compose(state.candidates, plan.intent, len(plan.subs))
    ids = [c.message_id for c in ranked[:max_evidence]]
    claim = "evidence for: " + "; ".join(f"{s.label}: {s.text}" for s in plan.subs)
    return ScoutAction(
        "submit_evidence", {"message_ids": ids, "claim": claim}, 0, "submit", cut_short=cut_short
    )


class OfflineScout:
    def __init__(self, k: int = 10, count_k: int = 20):
        self.k = k  # results per search
        self.count_k = count_k  # a count collects over more conversations

    def next_action(self, state: AgentState) -> ScoutAction:
        planned = (a for a in self._agenda(state) if not state.plan.was_tried(strategy_of(a)))
        action = next(planned, None)
        if action is not None and not state.must_submit:
            return action
        return submission(state, state.spend.budget.max_evidence, cut_short=action is not None)

    # ------------------------------------------------------------------------------------ the agenda
    def _search(self, query: str, sub: int, label: str, window=None, k: int | None = None) -> ScoutAction:
        args: dict = {"query": query, "k": k or self.k}
        if window is not None:
            if window.start is not None:
                args["since"] = window.start.isoformat()
            if window.end is not None:
                args["until"] = window.end.isoformat()
        return ScoutAction("smart_search", args, sub, label)

    def _agenda(self, state: AgentState) -> Iterator[ScoutAction]:
        plan = state.plan
        k = self.count_k if plan.intent == "count" else self.k
        if plan.anchor is not None and not plan.succeeded(-1):
            yield self._search(plan.anchor.event, -1, "date the event")
        window = plan.time_range if plan.intent in WINDOWED_INTENTS else None
        first = "search in range" if window is not None else "search"
        for i, sub in plan.parts:
            yield self._search(sub.text, i, first, window, k)
        for i, _sub in plan.parts:
            if not plan.succeeded(i):
                yield from self._fallbacks(state, i, k)
        for i, sub in enumerate(plan.subs):
            if not sub.answered:
                yield self._search(sub.text, i, first, window, k)
        if window is not None:
            for i, sub in enumerate(plan.subs):
                yield self._search(sub.text, i, "search", None, k)
        if plan.intent == "lookup":
            best = next((c for c in state.candidates if c.grounded and c.sub == 0), None)
            if best is not None and best.snippet.rstrip().endswith("?"):
                yield ScoutAction(
                    "read_source_message", {"message_id": best.message_id, "context": 1}, 0, "walk NEXT"
                )

    def _fallbacks(self, state: AgentState, i: int, k: int) -> Iterator[ScoutAction]:
        plan = state.plan
        sub = plan.subs[i]
        yield self._search(sub.text, i, "search", None, k)
        for concept in (c for c in plan.entry_concepts if c["for"] == i):
            label = f"enter by concept {concept['title']!r}"
            yield ScoutAction(
                "lens", {"node_id": concept["id"], "paths": ["Concept>Message"], "max_ids": k}, i, label
            )
        for topic in [t for t in plan.entry_topics if t["for"] == i][:1]:
            label = f"enter by topic {topic['label']!r}"
            yield ScoutAction(
                "lens", {"node_id": topic["id"], "paths": ["Topic>Segment>Message"], "max_ids": k}, i, label
            )
        words = [w for w in re.findall(r"[A-Za-z0-9][A-Za-z0-9'\-]*", sub.text) if _content(w)]
        if words and " ".join(words).lower() != sub.text.lower():
            yield self._search(" ".join(words), i, "search key words", None, k)


def _content(word: str) -> bool:
    stems = tokenize(word)
    return bool(stems) and stems[0] not in GENERIC

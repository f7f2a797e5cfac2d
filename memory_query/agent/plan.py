"""The Planner's state, kept across the loop's iterations: the sub-questions, the time range, the entry points,
and every strategy tried with how it went, so a failed one is never repeated (the seed's "Amnesia" failure:
a Scout that forgot which searches had failed looped on them).

Intents: `lookup` (one thing to find), `comparison` (two or more events to find apart and relate: "which did
I do first, A or B?", "how many days between A and B"), `count` (a collection over sessions: "how many X",
"how much in total"), `multi_part` (several questions in one).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime

from memory_query.agent.timeframe import EventAnchor, TimeRange

INTENTS = ("lookup", "comparison", "count", "multi_part")


@dataclass
class SubQuestion:
    text: str  # what the Scout searches for
    label: str  # "main", "A", "B", "part 2", "whole question"
    #: the answer is about it (False: searched for context only — a comparison's whole question, whose words
    #: together find what a part's words alone may miss)
    answered: bool = True


@dataclass(frozen=True)
class Strategy:
    """One way of looking: a tool with its arguments, for one sub-question."""

    tool: str
    args: tuple[tuple[str, object], ...]  # sorted (name, value) pairs: hashable and comparable
    sub: int  # index of the sub-question in the plan (-1: the event anchor)
    label: str  # how a person would say it: "search in range", "enter by concept"

    @classmethod
    def of(cls, tool: str, args: dict, sub: int, label: str) -> Strategy:
        return cls(tool, tuple(sorted((k, _frozen(v)) for k, v in args.items())), sub, label)

    @property
    def key(self) -> str:
        return json.dumps([self.tool, [[k, v] for k, v in self.args]], default=str)

    def arguments(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.args}


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


@dataclass
class Plan:
    question: str
    asked_at: datetime  # the question's date: relative time words are read against it
    intent: str
    subs: list[SubQuestion]
    time_range: TimeRange | None = None
    anchor: EventAnchor | None = None
    #: the question asks for an amount of time ("how many days ago", "how many weeks between A and B")
    measure: str | None = None
    #: a comparison's direction: "first" (earliest wins) or "last"
    order: str | None = None
    #: the corpus's named participants (first names, lower case; not role-like authors such as "user")
    participants: frozenset[str] = frozenset()
    entry_concepts: list[dict] = field(default_factory=list)  # {"id", "title"} the searches reached
    entry_topics: list[dict] = field(default_factory=list)  # {"id", "label"}
    tried: list[tuple[Strategy, str]] = field(default_factory=list)  # (strategy, "ok" | "failed" | …)
    notes: list[str] = field(default_factory=list)  # what the Planner concluded along the way

    @property
    def parts(self) -> list[tuple[int, SubQuestion]]:
        """The sub-questions the answer is about, with their index."""
        return [(i, s) for i, s in enumerate(self.subs) if s.answered]

    @property
    def failed(self) -> set[str]:
        return {s.key for s, outcome in self.tried if outcome != "ok"}

    def was_tried(self, strategy: Strategy) -> bool:
        return any(s.key == strategy.key for s, _ in self.tried)

    def record(self, strategy: Strategy, outcome: str) -> None:
        self.tried.append((strategy, outcome))

    def succeeded(self, sub: int) -> bool:
        return any(s.sub == sub and outcome == "ok" for s, outcome in self.tried)

    def as_dict(self) -> dict:
        return {
            "question": self.question,
            "asked_at": self.asked_at.isoformat(),
            "intent": self.intent,
            "sub_questions": [{"label": s.label, "text": s.text, "answered": s.answered} for s in self.subs],
            "time_range": self.time_range.as_dict() if self.time_range else None,
            "anchor": self.anchor.as_dict() if self.anchor else None,
            "measure": self.measure,
            "order": self.order,
            "entry_concepts": self.entry_concepts,
            "entry_topics": self.entry_topics,
            "tried": [
                {
                    "tool": s.tool,
                    "args": s.arguments(),
                    "for": self._label(s.sub),
                    "how": s.label,
                    "outcome": o,
                }
                for s, o in self.tried
            ],
            "notes": self.notes,
        }

    def _label(self, sub: int) -> str:
        return "anchor" if sub < 0 else self.subs[sub].label

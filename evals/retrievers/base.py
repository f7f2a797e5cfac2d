"""The one interface every retrieval method implements.

A `Retriever` builds a `BuiltCorpus` from one haystack (a LongMemEval question's haystack, a LoCoMo
conversation), timing each build stage; the built corpus answers a question (with its time of asking) with
ranked benchmark turn ids and ranked session ids.

Session ranking rule for turn-level methods: a session ranks by its best turn (the session of the
top-ranked turn first, then the next session to appear in the turn ranking, ...), computed over the full
turn ranking so every session with an indexed turn gets a rank.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from evals.datasets import Haystack, Question, Turn

TOP_K = 50


@dataclass(frozen=True)
class Retrieval:
    ranked_turns: list[str]
    ranked_sessions: list[str]


@dataclass
class StageTimer:
    """Seconds per build stage (a stage may run several times; times add up)."""

    seconds: dict[str, float] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)  # e.g. texts embedded

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def count(self, name: str, n: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


class BuiltCorpus(ABC):
    @abstractmethod
    def retrieve(self, question: Question, k: int = TOP_K) -> Retrieval:
        """Top-k turn ids and top-k session ids for the question, best first."""


class Retriever(ABC):
    #: the `method` value in retrievals.jsonl
    name: str

    @abstractmethod
    def build(self, haystack: Haystack, timer: StageTimer) -> BuiltCorpus:
        """Index one haystack; time each stage on `timer`."""

    def describe(self) -> dict:
        """The method's configuration, for the report."""
        return {}


def rank_by_scores(turns: Sequence[Turn], scores: np.ndarray, k: int) -> Retrieval:
    """Turns by descending score (ties keep haystack order); sessions by their best turn."""
    order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
    ranked = [turns[i] for i in order]
    return Retrieval(
        [t.turn_id for t in ranked[:k]], sessions_by_best_turn([t.session_id for t in ranked], k)
    )


def sessions_by_best_turn(session_of_ranked_turns: Sequence[str], k: int) -> list[str]:
    seen: dict[str, None] = {}
    for sid in session_of_ranked_turns:
        if sid not in seen:
            seen[sid] = None
            if len(seen) == k:
                break
    return list(seen)


def filter_turns(haystack: Haystack, user_turns_only: bool) -> list[Turn]:
    """The turns a flat method indexes: all of them (both roles), or only the user turns."""
    if not user_turns_only:
        return list(haystack.turns)
    return [t for t in haystack.turns if t.role == "user"]

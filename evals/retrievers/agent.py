"""The `agent` method: the Planner → Scout → Synthesizer loop (`memory_query.api.ask`) over the corpora the
`memory` method builds (one build per haystack between them), asked at the question's date. Its ranking is
the evidence the Scout submitted, in its order, then the rest of what it saw (the ranking the agent loop
returns as `ranked_message_ids`), mapped to benchmark ids like the memory methods'.

Per question it keeps the steps taken, the cap that stopped it, the intent and whether it abstained; the
report's method configuration gives their distribution (steps median / p95). Every loop is also appended
to the corpus's agent trace.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import numpy as np

from evals.retrievers.memory import CorpusBuilder, MemoryRetriever
from memory_core.store.db import CorpusStore


class AgentRetriever(MemoryRetriever):
    def __init__(
        self,
        build_corpus: CorpusBuilder,
        ask_fn: Callable[..., Any],
        pool: Any,
        driver: Any,
        budget: Any = None,
        name: str = "agent",
    ):
        super().__init__(build_corpus, ask_fn, pool, None, name)
        self.driver = driver
        self.budget = budget
        self.answers: list[dict] = []  # per question: steps, stopped_by, intent, abstained, latency

    def ask(self, question: str, store: CorpusStore, k: int, as_of=None) -> dict:
        answer = self.query_fn(
            question, store, as_of=as_of, driver=self.driver, budget=self.budget, pool=self.pool
        )
        self.answers.append(
            {
                "steps": len(answer.steps),
                "stopped_by": answer.stopped_by,
                "intent": answer.plan.intent,
                "abstained": answer.abstained,
                "latency_ms": answer.latency_ms,
                "tokens": answer.tokens,
            }
        )
        return {"items": [{"message_id": m} for m in answer.ranked_message_ids[:k]]}

    def describe(self) -> dict:
        steps = np.asarray([a["steps"] for a in self.answers] or [0])
        latency = np.asarray([a["latency_ms"] for a in self.answers] or [0.0])
        budget = self.budget
        return {
            "ask": f"{getattr(self.query_fn, '__module__', '?')}.{getattr(self.query_fn, '__name__', '?')}",
            **self.driver.describe(),
            "budget": {
                "max_steps": budget.max_steps,
                "max_tokens": budget.max_tokens,
                "max_evidence": budget.max_evidence,
            }  # fmt: skip
            if budget
            else {},
            "questions": len(self.answers),
            "steps": {
                "median": float(np.median(steps)),
                "p95": float(np.percentile(steps, 95)),
                "max": int(steps.max()),
                "mean": round(float(steps.mean()), 2),
            },
            "loop_latency_ms": {
                "median": round(float(np.median(latency)), 1),
                "p95": round(float(np.percentile(latency, 95)), 1),
            },  # fmt: skip
            "stopped_by": dict(Counter(str(a["stopped_by"]) for a in self.answers)),
            "intents": dict(Counter(a["intent"] for a in self.answers)),
            "abstained": sum(1 for a in self.answers if a["abstained"]),
            "tokens": int(sum(a["tokens"] for a in self.answers)),
        }

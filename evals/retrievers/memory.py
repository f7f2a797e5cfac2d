"""The `memory` methods: the pipeline's own read side, `memory_query.query_memory`, over a corpus built by
the real pipeline from the haystack (`memory`: every retrieval path; `memory_flat`: the same corpora with
some paths switched off, see `evals.methods.MEMORY_METHODS`).

Building goes through a `CorpusBuilder` the caller injects (the CLI's registers the haystack's record with
`memory_core.corpora.plan_corpora/register` and materialises every stage through Dagster), so this module
imports no Dagster; `BuildOnce` lets every memory method of a run share one build per haystack. Asking:
`query_memory(question, store, k, as_of=question date, settings=the method's, pool=the run's)`; the
evidence message ids it returns are mapped to benchmark ids through the source store: a turn is its
message's `source_ref` (LongMemEval `<session_id>_<turn index>`, LoCoMo `dia_id`), a session its
conversation's `source_ref` (LongMemEval session id; LoCoMo `<sample_id>:S<n>` → `S<n>`). Sessions rank by
their best turn.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from sqlalchemy import select

from evals.datasets import Haystack, Question
from evals.retrievers.base import TOP_K, BuiltCorpus, Retrieval, Retriever, StageTimer, sessions_by_best_turn
from memory_core.errors import MemoryOSError
from memory_core.store.db import CorpusStore
from memory_core.store.schema import conversations, messages

QueryFn = Callable[..., Any]


class MemoryMethodUnavailable(MemoryOSError):
    """The read side (`memory_query.query_memory`) is not installed in this checkout."""


class MemoryResultError(MemoryOSError):
    """query_memory returned something the harness cannot map to benchmark ids."""


def load_read_side() -> ModuleType:
    """`memory_query` (its `query_memory`, `ReaderPool`, `RetrievalSettings`), or a clear error without it."""
    try:
        module = importlib.import_module("memory_query")
    except ModuleNotFoundError as exc:
        if exc.name != "memory_query":
            raise
        raise MemoryMethodUnavailable(
            "the memory method needs memory_query.query_memory (the read side), which this checkout does not have "
            "yet; run the flat baselines with --methods bm25,dense"
        ) from None
    if not callable(getattr(module, "query_memory", None)):
        raise MemoryMethodUnavailable(
            "memory_query has no query_memory function; the memory method cannot run"
        )
    return module


@dataclass
class PipelineCorpus:
    """A corpus the pipeline built from one haystack, and how long each asset took."""

    store: CorpusStore
    stage_seconds: dict[str, float] = field(default_factory=dict)


CorpusBuilder = Callable[[Haystack], PipelineCorpus]


class BuildOnce:
    """A builder shared by the memory methods of one run: the harness builds each haystack for every method
    in turn, and the second method reads the corpus the first built (no build time counted again)."""

    def __init__(self, build: CorpusBuilder):
        self.build = build
        self._last: tuple[str, PipelineCorpus] | None = None

    def __call__(self, haystack: Haystack) -> PipelineCorpus:
        if self._last is not None and self._last[0] == haystack.haystack_id:
            return PipelineCorpus(self._last[1].store)
        corpus = self.build(haystack)
        self._last = (haystack.haystack_id, corpus)
        return corpus


def evidence_message_ids(result: Any) -> list[str]:
    """Message ids of query_memory's ranked evidence, in order, without repeats.

    Accepted shapes: an object or dict with `items` (or `evidence`), or a plain sequence of items; an item
    is an object or dict with `message_id` (or a `message_ids` list, e.g. a concept with its evidence).
    """
    items = None
    for key in ("items", "evidence"):
        items = result.get(key) if isinstance(result, dict) else getattr(result, key, None)
        if items is not None:
            break
    if items is None and isinstance(result, list | tuple):
        items = result
    if items is None:
        raise MemoryResultError(
            f"query_memory returned a {type(result).__name__} without ranked evidence items"
        )
    ids: dict[str, None] = {}
    for item in items:
        for mid in _item_message_ids(item):
            ids.setdefault(str(mid), None)
    return list(ids)


def _item_message_ids(item: Any) -> Iterable[str]:
    def get(name: str):
        return item.get(name) if isinstance(item, dict) else getattr(item, name, None)

    single = get("message_id")
    if single:
        return [single]
    return list(get("message_ids") or [])


def benchmark_ids(
    store: CorpusStore, message_ids: Sequence[str], benchmark: str, k: int = TOP_K
) -> Retrieval:
    """Ranked message ids → ranked benchmark turn ids and session ids, through `source_ref`."""
    if not message_ids:
        return Retrieval([], [])
    query = (
        select(
            messages.c.message_id, messages.c.source_ref, conversations.c.source_ref.label("conversation_ref")
        )
        .join(conversations, conversations.c.conversation_id == messages.c.conversation_id)
        .where(messages.c.message_id.in_(list(message_ids)))
    )
    with store.source.connect() as conn:
        refs = {row.message_id: (row.source_ref, row.conversation_ref) for row in conn.execute(query)}
    unknown = [m for m in message_ids if m not in refs]
    if unknown:
        raise MemoryResultError(
            f"query_memory returned {len(unknown)} message id(s) not in corpus {store.name!r}, e.g. {unknown[0]}"
        )
    turns: dict[str, None] = {}
    sessions: list[str] = []
    for mid in message_ids:
        turn_ref, conv_ref = refs[mid]
        turns.setdefault(turn_ref, None)
        sessions.append(conv_ref.rsplit(":", 1)[-1] if benchmark == "locomo" else conv_ref)
    return Retrieval(list(turns)[:k], sessions_by_best_turn(sessions, k))


class _MemoryCorpus(BuiltCorpus):
    def __init__(self, store: CorpusStore, benchmark: str, ask: Callable[..., Any]):
        self.store = store
        self.benchmark = benchmark
        self.ask = ask

    def retrieve(self, question: Question, k: int = TOP_K) -> Retrieval:
        result = self.ask(question.question, self.store, k, as_of=question.as_of)
        return benchmark_ids(self.store, evidence_message_ids(result), self.benchmark, k)


class MemoryRetriever(Retriever):
    """A memory method: `query_fn` (the read side's `query_memory`) with the method's `settings` (None: the
    read side's defaults), through the run's reader `pool`."""

    def __init__(
        self,
        build_corpus: CorpusBuilder,
        query_fn: QueryFn,
        pool: Any = None,
        settings: Any = None,
        name: str = "memory",
    ):
        self.build_corpus = build_corpus
        self.query_fn = query_fn
        self.pool = pool
        self.settings = settings
        self.name = name

    def describe(self) -> dict:
        query = f"{getattr(self.query_fn, '__module__', '?')}.{getattr(self.query_fn, '__name__', '?')}"
        return {"query": query, **(self.settings.describe() if self.settings is not None else {})}

    def ask(self, question: str, store: CorpusStore, k: int, as_of=None):
        return self.query_fn(question, store, k, as_of=as_of, settings=self.settings, pool=self.pool)

    def build(self, haystack: Haystack, timer: StageTimer) -> BuiltCorpus:
        corpus = self.build_corpus(haystack)
        for stage, seconds in corpus.stage_seconds.items():
            timer.seconds[stage] = timer.seconds.get(stage, 0.0) + seconds
        return _MemoryCorpus(corpus.store, haystack.benchmark, self.ask)

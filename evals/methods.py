"""Method names → retrievers for one run.

`bm25`, `dense`: flat over ALL turns (both roles), the baselines the issue names. `bm25_user`, `dense_user`
(LongMemEval only): flat over the user turns alone, i.e. over exactly the documents LongMemEval scores; the
assistant turns then cannot crowd the ranking or, for BM25, shift the term statistics. `memory`: the pipeline
and its read side with every retrieval path; `memory_flat`: the same built corpora (one build per haystack)
asked with the hierarchy's paths — concept, topic, graph — switched off, i.e. what the source alone gives;
`memory_structure`: the same corpora asked with only those paths (every raw-source path off). `agent`: the
same built corpora asked through the agent loop (`memory_query.api.ask`, the offline driver): the evidence its
Scout submitted, ranked, then the rest of what it saw.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from evals.embedding import MemoEmbedder, cached, make_embedder
from evals.retrievers.agent import AgentRetriever
from evals.retrievers.base import Retriever
from evals.retrievers.bm25 import Bm25Retriever
from evals.retrievers.dense import DenseRetriever
from evals.retrievers.memory import BuildOnce, CorpusBuilder, MemoryRetriever, load_read_side
from memory_core.errors import InputError
from memory_core.store.db import MemoryHome

#: memory method → the retrieval paths it switches off (registry names, `memory_query.paths.PATH_NAMES`)
MEMORY_METHODS: dict[str, tuple[str, ...]] = {
    "memory": (),
    "memory_flat": ("concept", "topic", "graph"),
    # the hierarchy's paths alone: topic → concept → evidence and graph synthesis, no raw-source path
    "memory_structure": ("lexical", "session", "dense_message", "dense_segment", "speaker"),
}
AGENT_METHODS = ("agent",)
METHODS = (*MEMORY_METHODS, *AGENT_METHODS, "bm25", "dense", "bm25_user", "dense_user")
DEFAULT_METHODS = ("memory", "bm25", "dense")


def parse_methods(text: str | Sequence[str]) -> list[str]:
    names = [m.strip() for m in (text.split(",") if isinstance(text, str) else text) if m.strip()]
    unknown = [m for m in names if m not in METHODS]
    if unknown or not names:
        raise InputError(
            f"unknown method(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(METHODS)}"
        )
    return list(dict.fromkeys(names))


def make_retrievers(
    names: Sequence[str],
    benchmark: str,
    embedder_kind: str = "minilm",
    corpus_builder: Callable[[], CorpusBuilder] | None = None,
    embedding_cache: MemoryHome | None = None,
) -> list[Retriever]:
    """Retrievers in the given order. The memory methods are checked first: a missing read side fails the
    run before any baseline work. `corpus_builder` makes the pipeline builder (only called for them);
    `embedding_cache`: the memory home whose shared embedding cache holds the dense turn vectors."""
    if benchmark != "longmemeval" and any(n.endswith("_user") for n in names):
        raise InputError(
            "the *_user methods rank LongMemEval's user turns; LoCoMo scores every dialog turn, use bm25/dense"
        )
    memory = _memory_retrievers(
        [n for n in names if n in MEMORY_METHODS or n in AGENT_METHODS], corpus_builder
    )
    embedder = make_embedder(embedder_kind) if any(n.startswith("dense") for n in names) else None
    documents = MemoEmbedder(cached(embedder, embedding_cache)) if embedder is not None else None
    out: list[Retriever] = []
    for name in names:
        if name in memory:
            out.append(memory[name])
        elif name in ("bm25", "bm25_user"):
            out.append(Bm25Retriever(user_turns_only=name == "bm25_user"))
        else:
            out.append(DenseRetriever(embedder, user_turns_only=name == "dense_user", documents=documents))
    return out


def _memory_retrievers(
    names: Sequence[str], corpus_builder: Callable[[], CorpusBuilder] | None
) -> dict[str, Retriever]:
    """The memory methods of a run (and the agent, which reads the same corpora): one read side, one reader
    pool, one build per haystack between them."""
    if not names:
        return {}
    if corpus_builder is None:
        raise InputError("the memory methods need a pipeline corpus builder")
    read_side = load_read_side()  # fails before any build when the read side is missing
    pool, build = read_side.ReaderPool(), BuildOnce(corpus_builder())
    out: dict[str, Retriever] = {}
    for name in names:
        if name in AGENT_METHODS:
            from memory_query.agent import AgentBudget, OfflineDriver
            from memory_query.api import ask

            out[name] = AgentRetriever(build, ask, pool, OfflineDriver(), AgentBudget(), name)
        else:
            settings = read_side.RetrievalSettings().without(*MEMORY_METHODS[name])
            out[name] = MemoryRetriever(build, read_side.query_memory, pool, settings, name)
    return out

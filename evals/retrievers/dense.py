"""Flat dense retrieval: exact cosine between the question and every raw turn (vectors are L2-normalised)."""

from __future__ import annotations

import numpy as np

from evals.datasets import Haystack, Question, Turn
from evals.embedding import MemoEmbedder
from evals.retrievers.base import (
    TOP_K,
    BuiltCorpus,
    Retrieval,
    Retriever,
    StageTimer,
    filter_turns,
    rank_by_scores,
)
from memory_core.embeddings import CachedEmbedder
from memory_core.embeddings.base import Embedder


class _DenseCorpus(BuiltCorpus):
    def __init__(self, turns: list[Turn], vectors: np.ndarray, embedder: Embedder):
        self.turns = turns
        self.vectors = vectors
        self.embedder = embedder

    def retrieve(self, question: Question, k: int = TOP_K) -> Retrieval:
        if not self.turns:
            return Retrieval([], [])
        query = self.embedder.embed([question.question])[0]
        return rank_by_scores(self.turns, self.vectors @ query, k)


class DenseRetriever(Retriever):
    """`user_turns_only`: rank only the user turns (LongMemEval's documents) instead of both roles.

    `documents` embeds the turns (default: `embedder`); a run passes one `MemoEmbedder` over the shared
    persistent cache to both variants, so turns are embedded once. Questions go through `embedder` itself,
    so query latency always includes the model.
    """

    def __init__(self, embedder: Embedder, user_turns_only: bool = False, documents: Embedder | None = None):
        self.embedder = embedder
        self.documents = documents or embedder
        self._warm = False
        self.user_turns_only = user_turns_only
        self.name = "dense_user" if user_turns_only else "dense"

    def describe(self) -> dict:
        info = {
            "turns": "user turns only" if self.user_turns_only else "all turns (both roles)",
            "embedder": self.embedder.model_name,
            "search": "exact cosine",
        }
        documents = self.documents
        if isinstance(documents, MemoEmbedder):
            info["turn_vectors_memo"] = {"hits": documents.hits, "misses": documents.misses}
            documents = documents.inner
        if isinstance(documents, CachedEmbedder):
            info["embedding_cache"] = documents.stats.as_metadata("")
        return info

    def build(self, haystack: Haystack, timer: StageTimer) -> BuiltCorpus:
        if not self._warm:
            with timer.stage("model_load"):  # the first build of a run loads the model
                self.embedder.embed(["warm up"])
            self._warm = True
        turns = filter_turns(haystack, self.user_turns_only)
        documents = (
            self.documents.for_haystack(haystack.haystack_id)
            if isinstance(self.documents, MemoEmbedder)
            else self.documents
        )
        with timer.stage("embed"):
            vectors = documents.embed([t.document for t in turns])
        timer.count("turns_indexed", len(turns))
        return _DenseCorpus(turns, vectors, self.embedder)

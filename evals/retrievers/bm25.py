"""Flat BM25 over raw turns (bm25s, Lucene variant, k1 = 1.5, b = 0.75) with `evals.bm25_tokens.Tokenizer`."""

from __future__ import annotations

import bm25s
import numpy as np

from evals.bm25_tokens import Tokenizer
from evals.datasets import Haystack, Question, Turn
from evals.retrievers.base import (
    TOP_K,
    BuiltCorpus,
    Retrieval,
    Retriever,
    StageTimer,
    filter_turns,
    rank_by_scores,
)


class _Bm25Corpus(BuiltCorpus):
    def __init__(self, turns: list[Turn], index: bm25s.BM25 | None, tokenizer: Tokenizer):
        self.turns = turns
        self.index = index
        self.tokenizer = tokenizer

    def retrieve(self, question: Question, k: int = TOP_K) -> Retrieval:
        if self.index is None:
            return Retrieval([], [])
        vocab = self.index.vocab_dict
        tokens = [t for t in self.tokenizer(question.question) if t in vocab]
        scores = self.index.get_scores(tokens) if tokens else np.zeros(len(self.turns))
        return rank_by_scores(self.turns, scores, k)


class Bm25Retriever(Retriever):
    """`user_turns_only`: index only the user turns (LongMemEval's documents) instead of both roles."""

    def __init__(self, user_turns_only: bool = False, k1: float = 1.5, b: float = 0.75):
        self.user_turns_only = user_turns_only
        self.k1, self.b = k1, b
        self.name = "bm25_user" if user_turns_only else "bm25"
        self.tokenizer = Tokenizer()

    def describe(self) -> dict:
        return {
            "turns": "user turns only" if self.user_turns_only else "all turns (both roles)",
            "bm25": f"bm25s lucene k1={self.k1} b={self.b}",
            "tokens": "lower case, letter/digit runs, NLTK English stopwords, Porter stems",
        }

    def build(self, haystack: Haystack, timer: StageTimer) -> BuiltCorpus:
        turns = filter_turns(haystack, self.user_turns_only)
        with timer.stage("tokenize"):
            tokens = [self.tokenizer(t.document) for t in turns]
        if not turns:
            return _Bm25Corpus(turns, None, self.tokenizer)
        with timer.stage("index"):
            index = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
            index.index(tokens, show_progress=False)
        timer.count("turns_indexed", len(turns))
        return _Bm25Corpus(turns, index, self.tokenizer)

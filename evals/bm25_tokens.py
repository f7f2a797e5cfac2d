"""The lexical tokenisation of the flat BM25 baseline, the same for both benchmarks.

Lower case; tokens are runs of letters and digits (so "don't" → "don", "t", and "D1:3" → "d1", "3");
English stopwords removed (the NLTK list as bm25s ships it: conversational questions are full of "I", "my",
"did", which would otherwise dominate short queries); Porter stemming (NLTK's), so "adopted"/"adopting"
meet. Stems are memoised per tokenizer: a haystack has a few thousand distinct words.
"""

from __future__ import annotations

import re

from bm25s.stopwords import STOPWORDS_EN_PLUS
from nltk.stem import PorterStemmer

_WORD = re.compile(r"[^\W_]+")


class Tokenizer:
    def __init__(self, stopwords: frozenset[str] = frozenset(STOPWORDS_EN_PLUS), stem: bool = True):
        self.stopwords = stopwords
        self._stemmer = PorterStemmer() if stem else None
        self._stems: dict[str, str] = {}

    def _stem(self, word: str) -> str:
        stem = self._stems.get(word)
        if stem is None:
            stem = self._stemmer.stem(word) if self._stemmer else word
            self._stems[word] = stem
        return stem

    def __call__(self, text: str) -> list[str]:
        return [self._stem(w) for w in _WORD.findall(text.lower()) if w not in self.stopwords]

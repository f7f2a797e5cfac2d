"""Lexical retrieval: one tokenizer for every lexical index, and a BM25 index with saved id maps.

The tokenizer lower-cases, splits on non-alphanumerics (a hyphenated word also yields its joined form, so
"de-stress" matches "destress"), drops English stop words and Porter-stems what is left. Stems are memoised:
chat corpora repeat a small vocabulary, so stemming costs one dict lookup per token after warm-up.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below between
    both but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just let me more most my myself no nor not now
    of off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what
    when where which while who whom why will with would you your yours yourself yourselves s t ll re ve d m""".split()
)
_WORD = re.compile(r"[a-z0-9]+(?:[-'][a-z0-9]+)*")


@lru_cache(maxsize=1)
def _stemmer():
    from nltk.stem import PorterStemmer  # lazy: only lexical work needs it

    return PorterStemmer()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer().stem(word)


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for match in _WORD.finditer(text.lower()):
        word = match.group(0)
        parts = re.split(r"[-']", word) if ("-" in word or "'" in word) else [word]
        if len(parts) > 1 and parts[-1] in ("s", "t", "ll", "re", "ve", "d", "m"):
            parts = parts[:-1]  # possessives and contractions: "caroline's" -> "caroline"
        joined = "".join(parts)
        for part in dict.fromkeys([*parts, joined] if len(parts) > 1 else parts):
            if part and part not in STOP_WORDS:
                out.append(stem(part))
    return out


class LexicalIndex:
    """BM25 (Lucene's idf, k1, b) over token lists, precomputed as a sparse term × document weight matrix so a
    query is one sparse row sum. One `.npz` file: saving is a single atomic `os.replace`."""

    def __init__(self, ids: Sequence[str], vocab: dict[str, int], weights):
        self.ids = list(ids)
        self.vocab = vocab
        self.weights = weights  # scipy.sparse.csr_matrix, shape (len(vocab), len(ids))

    @property
    def n_docs(self) -> int:
        return len(self.ids)

    @classmethod
    def build(
        cls, ids: Sequence[str], docs: Iterable[list[str]], k1: float = 1.2, b: float = 0.75
    ) -> LexicalIndex:
        from scipy.sparse import csr_matrix

        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        tfs: list[int] = []
        lengths: list[int] = []
        for col, tokens in enumerate(docs):
            lengths.append(len(tokens))
            counts: dict[int, int] = {}
            for token in tokens:
                tid = vocab.setdefault(token, len(vocab))
                counts[tid] = counts.get(tid, 0) + 1
            rows.extend(counts)
            cols.extend([col] * len(counts))
            tfs.extend(counts.values())
        n = len(lengths)
        if len(ids) != n:
            raise ValueError(f"{len(ids)} ids for {n} documents")
        row = np.asarray(rows, dtype=np.int64)
        col = np.asarray(cols, dtype=np.int64)
        tf = np.asarray(tfs, dtype=np.float32)
        dl = np.asarray(lengths, dtype=np.float32)
        avgdl = float(dl.mean()) if n and dl.mean() > 0 else 1.0
        df = np.bincount(row, minlength=len(vocab)).astype(np.float32)
        idf = np.log1p((n - df + 0.5) / (df + 0.5))
        weight = idf[row] * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl[col] / avgdl)) if n else tf
        matrix = csr_matrix((weight.astype(np.float32), (row, col)), shape=(len(vocab), n))
        return cls(ids, vocab, matrix)

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document (0 where no query token occurs); a repeated query token counts once."""
        known = sorted({self.vocab[t] for t in query_tokens if t in self.vocab})
        if not known or not self.n_docs:
            return np.zeros(self.n_docs, dtype=np.float32)
        return np.asarray(self.weights[known].sum(axis=0), dtype=np.float32).ravel()

    def save(self, path: Path) -> None:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        m = self.weights
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as fp:
                np.savez(
                    fp,
                    data=m.data,
                    indices=m.indices,
                    indptr=m.indptr,
                    shape=np.asarray(m.shape),
                    ids=np.asarray(json.dumps(self.ids)),
                    vocab=np.asarray(json.dumps(self.vocab)),
                )
            os.replace(tmp, path)  # readers see the old or the new index, never half of one
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    @classmethod
    def load(cls, path: Path) -> LexicalIndex:
        from scipy.sparse import csr_matrix

        with np.load(Path(path)) as z:
            matrix = csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
            ids = json.loads(str(z["ids"]))
            vocab = json.loads(str(z["vocab"]))
        return cls(ids, vocab, matrix)

"""Lexical retrieval: one tokenizer for every lexical index, and a BM25 index with saved id maps.

The tokenizer lower-cases, splits on non-alphanumerics (a hyphenated word also yields its joined form, so
"de-stress" matches "destress"), drops English stop words and Porter-stems what is left (PyStemmer's C
Snowball stemmer). Stems are memoised: chat corpora repeat a small vocabulary.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tempfile
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import groupby, repeat
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
    import Stemmer  # PyStemmer: the Snowball Porter stemmer in C (lazy: only lexical work needs it)

    return Stemmer.Stemmer("porter")


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return _stemmer().stemWord(word)


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
        # typed arrays, not lists: a Python int in a list is ~36 bytes, and a 1M-message corpus has ~33M
        # postings (the index build held 4.5 GB of them)
        rows, cols, tfs, lengths = array("q"), array("q"), array("l"), array("l")
        for col, tokens in enumerate(docs):
            lengths.append(len(tokens))
            counts: dict[int, int] = {}
            for token in tokens:
                tid = vocab.setdefault(token, len(vocab))
                counts[tid] = counts.get(tid, 0) + 1
            rows.extend(counts)
            cols.extend(repeat(col, len(counts)))
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


# ------------------------------------------------------------------------------------------ corpus lexicon
CONTEXT_TOKENS = 40  # tokens borrowed from each neighbouring message


def lexicon_dir(store) -> Path:
    """Where a corpus's lexical indexes live (written by the `indexes` asset)."""
    return store.dir / "indexes" / "lexical"


def message_text_for_search(author: str, text: str, attributes: dict | None) -> str:
    """What a message is found by: who said it, what they said, and what the picture they shared shows."""
    caption = (attributes or {}).get("image_caption")
    return f"{author}: {text}" + (f" [image: {caption}]" if caption else "")


@dataclass
class CorpusLexicon:
    """The lexical indexes of a corpus: messages in their context, whole conversations, and concepts."""

    messages: LexicalIndex  # doc = previous message (capped) + the message twice + next message (capped)
    conversations: LexicalIndex
    concepts: LexicalIndex  # doc = title + description + aliases + its evidence messages' documents

    FILES = ("messages", "conversations", "concepts")

    def save(self, folder: Path) -> None:
        for name in self.FILES:
            getattr(self, name).save(Path(folder) / f"{name}.npz")

    @classmethod
    def load(cls, folder: Path) -> CorpusLexicon | None:
        paths = [Path(folder) / f"{name}.npz" for name in cls.FILES]
        if not all(p.exists() for p in paths):
            return None
        return cls(*(LexicalIndex.load(p) for p in paths))


EVIDENCE_MESSAGES = 8  # a concept's document holds the words of up to this many of its evidence messages


def build_corpus_lexicon(store, context_tokens: int = CONTEXT_TOKENS) -> CorpusLexicon:
    """Tokenise the corpus once and build its three lexical indexes (reads messages and concepts)."""
    from sqlalchemy import select

    from memory_core.store.schema import canonical_concepts, concept_evidence, messages

    ids: list[str] = []
    tokens: list[list[str]] = []
    convs: list[str] = []
    with store.source.connect() as conn:
        rows = conn.execute(
            select(
                messages.c.message_id,
                messages.c.conversation_id,
                messages.c.author,
                messages.c.text,
                messages.c.attributes,
            ).order_by(messages.c.conversation_id, messages.c.position)
        )
        for r in rows:
            ids.append(r.message_id)
            convs.append(r.conversation_id)
            # interned: the corpus's tokens are held until its three indexes are built, and one string
            # per distinct word (not per occurrence) is most of what a 1M-message build saves
            tokens.append(
                [sys.intern(t) for t in tokenize(message_text_for_search(r.author, r.text, r.attributes))]
            )

    def in_context(i: int) -> list[str]:
        """Message i's document: the previous message (capped), the message twice, the next (capped)."""
        own = tokens[i]
        prev = tokens[i - 1][:context_tokens] if i > 0 and convs[i - 1] == convs[i] else []
        nxt = tokens[i + 1][:context_tokens] if i + 1 < len(tokens) and convs[i + 1] == convs[i] else []
        return prev + own + own + nxt

    def docs() -> Iterator[list[str]]:  # made as the index consumes them, not all held at once
        for i in range(len(tokens)):
            yield in_context(i)

    conv_ids = [conv for conv, _ in groupby(convs)]  # the messages come in conversation order

    def conv_docs() -> Iterator[list[str]]:
        for _, group in groupby(zip(convs, tokens, strict=True), key=lambda pair: pair[0]):
            yield [t for _, own in group for t in own]

    row_of = {mid: i for i, mid in enumerate(ids)}
    with store.staging.connect() as conn:
        evidence: dict[str, list[str]] = {}
        for cid, mid in conn.execute(
            select(concept_evidence.c.concept_id, concept_evidence.c.message_id)
            .where(concept_evidence.c.status == "active")
            .order_by(concept_evidence.c.concept_id, concept_evidence.c.message_id)
        ):
            held = evidence.setdefault(cid, [])
            if mid not in held and len(held) < EVIDENCE_MESSAGES:
                held.append(mid)
        concepts = conn.execute(
            select(
                canonical_concepts.c.concept_id,
                canonical_concepts.c.title,
                canonical_concepts.c.description,
                canonical_concepts.c.aliases,
            ).where(canonical_concepts.c.state.not_in(("merged", "archived")))
        ).all()

    def concept_docs() -> Iterator[list[str]]:  # made as the index consumes them, like the messages'
        for r in concepts:
            # each evidence message as the messages index has it, in its context: the question it answers
            # ("What got you into running?") names what a bare answer ("My dad, years ago") does not
            said = [
                t for mid in evidence.get(r.concept_id, ()) if mid in row_of for t in in_context(row_of[mid])
            ]
            yield tokenize(" ".join([r.title, r.description, *(r.aliases or [])])) + said

    return CorpusLexicon(
        messages=LexicalIndex.build(ids, docs()),
        conversations=LexicalIndex.build(conv_ids, conv_docs()),
        concepts=LexicalIndex.build([r.concept_id for r in concepts], concept_docs()),
    )

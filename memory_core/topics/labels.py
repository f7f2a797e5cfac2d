"""Offline topic labels: class-based TF-IDF (c-TF-IDF) distinctive terms, optionally re-ranked by embedding.

All documents of a class (a topic) are joined into one; a term's weight in class c is
``tf(t, c) · log(1 + A / f(t))``: its frequency in the class (normalised by the class's length) times how
rare it is across all classes (A = average class length in words, f(t) = the term's frequency over every
class). Noise documents form a class of their own so that the rarity reflects the whole corpus, but get no
label. Unigrams and bigrams of adjacent words within a clause. Excluded: English stop words, contractions ("i'm", "won't"; possessives keep their
noun), chat filler ("thanks", "awesome"), chat roles and the corpus's speaker names (a name that occurs in
every topic of a conversation says nothing about any one of them).

Re-ranking (as BERTopic's KeyBERT-inspired representation): the top `candidates` c-TF-IDF terms of a class
are re-ordered by the cosine between each term's embedding and the class centroid, so the label names what
sits at the centre of the cluster rather than its most frequent peculiarity. Without an embedder the
c-TF-IDF order stands.

Then the profile = the first 10 distinct terms, where a term whose words an earlier term already covers, or an
inflection of one ("paintings" after "painting"), is skipped and a bigram nearly as strong as a picked unigram
replaces it ("adoption" → "adoption agency"); the label names the topic from the first terms (`topic_name`:
"Adoption advice and loving home"), it is not a list of tokens.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

ROLE_WORDS = frozenset({"user", "assistant", "system", "tool", "speaker"})
# chat filler that carries no topic however its frequency falls (greetings, reactions, hedges)
CHAT_FILLER = frozenset(
    "hey hi hello bye thanks thank yeah yes yep wow cool great awesome amazing glad sounds really just like "
    "good know think totally definitely sure ok okay oh lot lots things thing gonna wanna pretty tell let "
    "going got did doing does feel felt hope means ya lol haha".split()
)
_TOKEN = re.compile(r"(?u)\b[^\W\d_][\w-]*[^\W_]\b")  # words of 2+ chars starting with a letter
_CLAUSE = re.compile(r"[.,;:!?()\[\]{}\"“”…\n]+|\s[-–—]\s")
BIGRAM_REPLACES = 0.6
_NAME_SPLIT = re.compile(r"[^\w'-]+")
_POSSESSIVE = re.compile(r"\b(\w+)['’]s\b")
_CONTRACTION = re.compile(r"\b\w+(?:n['’]t|['’](?:m|re|ve|ll|d))\b")


@dataclass(frozen=True)
class TermLabel:
    label: str
    profile: str
    keywords: list[tuple[str, float]]  # the profile's terms with their c-TF-IDF weights


def name_stop_words(names: Iterable[str]) -> set[str]:
    """Lower-cased word tokens of speaker/author names, and the short forms people call them by ("mel",
    "caro" for Melanie, Caroline: a prefix of three or four letters)."""
    words: set[str] = set()
    for name in names:
        for token in _NAME_SPLIT.split((name or "").lower()):
            token = _POSSESSIVE.sub(r"\1", token).strip("'-")
            if len(token) > 1:
                words.add(token)
            if len(token) >= 5:
                words |= {token[:3], token[:4]}
    return words


def _preprocess(text: str) -> str:
    text = text.lower()
    text = _CONTRACTION.sub(" ", text)
    return _POSSESSIVE.sub(r"\1", text)


def _analyzer(stop: frozenset[str], bigrams: bool) -> Callable[[str], list[str]]:
    """Unigrams and bigrams of words adjacent inside one clause: no pair across punctuation or a stop word
    ("trail was steep, hiking" gives no "steep hiking"), so bigrams are collocations, not accidents."""

    def analyse(doc: str) -> list[str]:
        out: list[str] = []
        for clause in _CLAUSE.split(_preprocess(doc)):
            tokens = _TOKEN.findall(clause)
            keep = [t not in stop for t in tokens]
            out += [t for t, k in zip(tokens, keep, strict=True) if k]
            if bigrams:
                out += [
                    f"{a} {b}"
                    for a, b, ka, kb in zip(tokens, tokens[1:], keep, keep[1:], strict=False)
                    if ka and kb
                ]
        return out

    return analyse


def class_tfidf(
    class_docs: Sequence[str],
    extra_stop_words: Iterable[str] = (),
    bigrams: bool = True,
    top_n: int = 30,
) -> list[list[tuple[str, float]]]:
    """Per class, its `top_n` highest-weighted terms with their c-TF-IDF weights (highest first, ties by term)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, CountVectorizer

    if not class_docs:
        return []
    stop = frozenset(ENGLISH_STOP_WORDS | ROLE_WORDS | CHAT_FILLER | {w.lower() for w in extra_stop_words})
    vectorizer = CountVectorizer(analyzer=_analyzer(stop, bigrams))
    try:
        counts = vectorizer.fit_transform(class_docs)
    except ValueError:  # no term survives in any class (empty texts, only stop words)
        return [[] for _ in class_docs]
    counts = counts.tocsr().astype(np.float64)  # sparse: classes × vocabulary stays small at any scale
    terms = vectorizer.get_feature_names_out()
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    frequency = np.asarray(counts.sum(axis=0)).ravel()
    idf = np.log1p(lengths.mean() / np.maximum(frequency, 1.0))
    inverse_lengths = np.divide(1.0, lengths, out=np.zeros_like(lengths), where=lengths > 0)
    weights = counts.multiply(inverse_lengths[:, None]).multiply(idf[None, :]).tocsr()
    out: list[list[tuple[str, float]]] = []
    for i in range(weights.shape[0]):
        row = weights.getrow(i)
        row_terms, row_weights = terms[row.indices], row.data
        order = np.lexsort((row_terms, -row_weights))[:top_n]
        out.append([(str(row_terms[j]), float(row_weights[j])) for j in order if row_weights[j] > 0])
    return out


def distinct_terms(ranked: Sequence[tuple[str, float]], n: int) -> list[str]:
    """The first `n` distinct terms of a ranked (term, score) list, score = what it was ranked by. Inflections
    of a term already picked are the same term ("paintings", "painted" after "painting")."""
    picked: list[tuple[str, float]] = []
    for term, score in ranked:
        if len(picked) >= n:
            break
        if any(_stems(term) == _stems(t) for t, _ in picked):
            continue
        words = set(term.split())
        picked_words = [set(t.split()) for t, _ in picked]
        if any(words <= pw for pw in picked_words):
            continue
        if len(words) > 1:
            if any(len(pw) > 1 and pw & words for pw in picked_words):
                continue
            contained = [i for i, pw in enumerate(picked_words) if len(pw) == 1 and pw <= words]
            if contained:
                i = contained[0]
                if score >= BIGRAM_REPLACES * picked[i][1]:  # a real collocation, not a stray pair
                    picked[i] = (term, picked[i][1])
                    picked = [p for j, p in enumerate(picked) if j == i or j not in contained]
                continue
        picked.append((term, score))
    return [t for t, _ in picked]


def _stems(term: str) -> tuple[str, ...]:
    from memory_core.lexical import tokenize

    return tuple(tokenize(term)) or (term,)


def topic_name(terms: Sequence[str]) -> str:
    """A name for a topic from its distinctive terms, best first: the strongest phrase, joined by the next
    term that shares no word with it ("Adoption advice and loving home", "Pottery class and clay"); a lone
    term when that is all there is. Not a list of tokens."""
    if not terms:
        return ""
    head = terms[0]
    second = next((t for t in terms[1:] if not set(t.split()) & set(head.split())), "")
    name = f"{head} and {second}" if second else head
    return name[:1].upper() + name[1:]


def term_labels(
    class_docs: Sequence[str],
    extra_stop_words: Iterable[str] = (),
    noise_doc: str | None = None,
    label_terms: int = 3,
    profile_terms: int = 10,
    candidates: int = 30,
    centroids: np.ndarray | None = None,
    embed: Callable[[list[str]], np.ndarray] | None = None,
) -> list[TermLabel]:
    """A label and profile per class (the noise document only informs term rarity). With `centroids` (one
    unit vector per class) and `embed`, candidate terms are re-ranked by cosine to their class's centroid."""
    docs = list(class_docs) + ([noise_doc] if noise_doc else [])
    ranked = class_tfidf(docs, extra_stop_words, top_n=max(candidates, profile_terms))[: len(class_docs)]
    if embed is not None and centroids is not None and any(ranked):
        vocabulary = sorted({t for terms in ranked for t, _ in terms})
        vectors = dict(zip(vocabulary, embed(vocabulary), strict=True))
        reranked = []
        for c, terms in enumerate(ranked):
            sims = {t: float(vectors[t] @ centroids[c]) for t, _ in terms}
            reranked.append(sorted(((t, sims[t]) for t, _ in terms), key=lambda ts: (-ts[1], ts[0])))
    else:
        reranked = ranked
    labels = []
    for terms, order in zip(ranked, reranked, strict=True):
        weight = dict(terms)
        chosen = distinct_terms(order, max(label_terms, profile_terms))
        label = topic_name(chosen[:label_terms]) or "(no distinctive terms)"
        profile = ", ".join(chosen[:profile_terms])
        keywords = [(t, round(weight[t], 6)) for t in chosen[:profile_terms]]
        labels.append(TermLabel(label=label, profile=profile, keywords=keywords))
    return labels

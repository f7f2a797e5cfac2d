"""Concept purity (docs/architecture.md §9: evidence homogeneity inside a concept), measured on the evidence itself.

Each piece of evidence is embedded as what it says: a fact's evidence span (the clause that states it), a
name's sentence around its span (what is said where the name occurs). A concept is pure when its pieces
are more alike than pieces of evidence picked from elsewhere in the memory:

    purity(c) = mean over ordered pairs (i, j) of c's pieces of  P_k[ cos(e_i, e_k) < cos(e_i, e_j) ]

k ranging over the evidence of other concepts (a sample of at most `reference` pieces, fixed seed; a piece
with the same message span as e_i does not count: a pattern and its episode share evidence). So 1.0: every
pair of the concept's pieces is closer than any outside evidence; 0.5: no closer than chance; a concept
that glued two things together ("Max" the dog and "Max" the coworker) falls towards 0.5 because half its
pairs are far apart. The figure is a percentile, so it does not depend on the scale of an embedder's
cosines, and 25 identical mention keys no longer score 1.0 whatever their evidence says.
Reported over concepts with at least two pieces of evidence.

Sampled, so the figure costs the same whatever the corpus's size (embedding every piece of evidence was
11 s of a 500-turn haystack's 105 s build, for a metric): at most `concepts` concepts are scored and the
reference is at most `reference` pieces, each chosen by a seeded hash of what it is (a concept's id, a
piece's concept and span), not by position, so a concept stays in the sample as the memory grows around
it and a rebuild scores the same concepts. Only the scored concepts' pieces and the reference are
embedded. `purity_sample` in the result says how much was sampled.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict

import numpy as np
from sqlalchemy import select

from memory_core.embeddings.base import Embedder
from memory_core.ontology.concepts import LIVE_STATES, NAME_TYPES
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, concept_evidence, messages

_CHUNK = 500
_CONTEXT = 160  # characters each side of a name's span, cut to its sentence
_SENTENCE_END = re.compile(r"[.!?\n]")


def evidence_context(text: str, start: int, end: int, is_name: bool) -> str:
    """What a piece of evidence says: the span itself for a fact, the sentence around it for a name."""
    if not is_name:
        return text[start:end]
    lo, hi = max(0, start - _CONTEXT), min(len(text), end + _CONTEXT)
    before = [m.end() for m in _SENTENCE_END.finditer(text, lo, start)]
    after = _SENTENCE_END.search(text, end, hi)
    return text[before[-1] if before else lo : after.end() if after else hi].strip()


def _evidence(store: CorpusStore) -> list[tuple[str, str, int, int, bool]]:
    """(concept, message, start, end, is a name) of every active piece of evidence of a live concept."""
    cc, ce = canonical_concepts.c, concept_evidence.c
    with store.staging.connect() as conn:
        rows = conn.execute(
            select(ce.concept_id, ce.message_id, ce.span_start, ce.span_end, cc.type)
            .join(canonical_concepts, cc.concept_id == ce.concept_id)
            .where(cc.state.in_(LIVE_STATES), ce.status == "active")
            .order_by(ce.concept_id, ce.message_id, ce.span_start)
        ).all()
    return [(r.concept_id, r.message_id, r.span_start, r.span_end, r.type in NAME_TYPES) for r in rows]


def _texts(store: CorpusStore, message_ids: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    with store.source.connect() as conn:
        for i in range(0, len(message_ids), _CHUNK):
            chunk = message_ids[i : i + _CHUNK]
            out.update(
                conn.execute(
                    select(messages.c.message_id, messages.c.text).where(messages.c.message_id.in_(chunk))
                ).all()
            )
    return out


_BATCH_PIECES = 4096  # pieces multiplied against the sample at once (~33 MB at 2,000 sample pieces)


def _against_sample(multi: dict[str, list[int]], v: np.ndarray, sample: np.ndarray):
    """(concept, its pieces, pieces × sample similarities) per concept, in `multi`'s order: one product per
    batch of concepts (one per concept was most of the figure's time; one for all of them grows with the
    corpus: 8 KB a piece)."""
    items = list(multi.items())
    reference = v[sample].T
    start = 0
    while start < len(items):
        end, size = start, 0
        while end < len(items) and (end == start or size + len(items[end][1]) <= _BATCH_PIECES):
            size += len(items[end][1])
            end += 1
        rows = [i for _, idx in items[start:end] for i in idx]
        products = v[rows] @ reference
        offset = 0
        for cid, idx in items[start:end]:
            yield cid, idx, products[offset : offset + len(idx)]
            offset += len(idx)
        start = end


SAMPLE_CONCEPTS = 100
SAMPLE_REFERENCE = 300
SAMPLE_PER_CONCEPT = 8


def _capped(cid: str, idx: list[int], pieces: list, cap: int, seed: int) -> list[int]:
    """A concept's pieces, or a seeded `cap` of them (its mean over pairs, estimated on fewer pairs)."""
    if len(idx) <= cap:
        return idx
    keys = [f"{cid}\x1f{pieces[i][1]}\x1f{pieces[i][2]}\x1f{pieces[i][3]}" for i in idx]
    return sorted(idx[j] for j in _seeded_order(keys, seed)[:cap])


def _seeded_order(keys: list[str], seed: int) -> list[int]:
    """Positions of `keys` in the order of a seeded hash of each key (a sample = a prefix of it)."""
    rank = [hashlib.sha256(f"{seed}\x1f{k}".encode()).hexdigest() for k in keys]
    return sorted(range(len(keys)), key=rank.__getitem__)


def purity(
    store: CorpusStore,
    embedder: Embedder,
    threshold: float = 0.70,
    reference: int = SAMPLE_REFERENCE,
    seed: int = 0,
    concepts: int = SAMPLE_CONCEPTS,
    per_concept: int = SAMPLE_PER_CONCEPT,
) -> dict:
    pieces = _evidence(store)
    by_concept: dict[str, list[int]] = defaultdict(list)
    for i, p in enumerate(pieces):
        by_concept[p[0]].append(i)
    multi = {c: idx for c, idx in by_concept.items() if len(idx) >= 2}
    if not multi:
        return {"purity": 1.0, "purity_min": 1.0, "concepts_scored": 0, "impure_concepts": 0,
                "purity_by_concept": {}, "measure": "evidence_percentile",
                "purity_sample": _sample_figures(0, 0, 0, len(pieces))}  # fmt: skip
    eligible = len(multi)
    if eligible > concepts:
        ids = list(multi)
        kept = set(_seeded_order(ids, seed)[:concepts])
        multi = {c: idx for j, (c, idx) in enumerate(multi.items()) if j in kept}
    multi = {c: _capped(c, idx, pieces, per_concept, seed) for c, idx in multi.items()}
    piece_keys = [f"{c}\x1f{m}\x1f{a}\x1f{b}" for c, m, a, b, _ in pieces]
    sample = np.array(sorted(_seeded_order(piece_keys, seed)[:reference]), dtype=np.int64)
    needed = sorted({i for idx in multi.values() for i in idx} | set(sample.tolist()))
    texts = _texts(store, sorted({pieces[i][1] for i in needed}))
    contexts = {
        i: evidence_context(texts.get(pieces[i][1], ""), pieces[i][2], pieces[i][3], pieces[i][4])
        or "(missing)"
        for i in needed
    }
    unique = sorted(set(contexts.values()))
    position = {t: i for i, t in enumerate(unique)}
    vectors = np.concatenate([embedder.embed(unique[i : i + 2048]) for i in range(0, len(unique), 2048)])
    vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    # one row per piece read (the scored concepts' and the reference's), not one per piece of the memory
    row = {i: r for r, i in enumerate(needed)}
    v = vectors[[position[contexts[i]] for i in needed]].astype(np.float32)
    scores = _scores(
        {c: [row[i] for i in idx] for c, idx in multi.items()},
        np.array([pieces[k][0] for k in sample.tolist()]),
        v,
        np.array([row[k] for k in sample.tolist()], dtype=np.int64),
        [(pieces[i][1], pieces[i][2], pieces[i][3]) for i in needed],
    )
    values = np.array(list(scores.values())) if scores else np.array([1.0])
    return {
        "purity": round(float(values.mean()), 4),
        "purity_min": round(float(values.min()), 4),
        "concepts_scored": len(scores),
        "impure_concepts": int((values < threshold).sum()) if scores else 0,
        "purity_by_concept": scores,
        "measure": "evidence_percentile",
        "purity_sample": _sample_figures(eligible, len(multi), len(sample), len(pieces)),
    }


def _sample_figures(eligible: int, sampled: int, reference: int, pieces: int) -> dict:
    return {
        "concepts_eligible": eligible,
        "concepts_sampled": sampled,
        "reference_pieces": reference,
        "evidence_pieces": pieces,
    }


def _scores(
    multi: dict[str, list[int]],
    owners: np.ndarray,
    v: np.ndarray,
    sample: np.ndarray,
    spans: list[tuple],
) -> dict[str, float]:
    """Per concept: the mean percentile of its pairs' similarity among its pieces' similarities to the
    reference's pieces of other concepts (a piece with the same span as the pair's first does not count).
    `multi`'s and `sample`'s positions are rows of `v` and `spans`; `owners`: each reference piece's concept."""
    in_sample: dict[tuple, list[int]] = defaultdict(list)  # span → the sample positions holding it
    for j, k in enumerate(sample.tolist()):
        in_sample[spans[k]].append(j)
    scores: dict[str, float] = {}
    for cid, idx, against in _against_sample(multi, v, sample):
        outside = owners != cid  # sample positions holding other concepts' evidence
        if not outside.any():
            continue
        within = v[idx] @ v[idx].T  # n × n
        values = []
        for a, i in enumerate(idx):
            keep = outside.copy()
            keep[in_sample.get(spans[i], [])] = False
            ref = np.sort(against[a][keep])
            if ref.size:
                row = np.delete(within[a], a)
                values.extend((np.searchsorted(ref, row, side="left") / ref.size).tolist())
        if values:
            scores[cid] = float(np.mean(values))
    return scores

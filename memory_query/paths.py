"""The retrieval paths of `query_memory`, in one ordered registry (`REGISTRY`).

Each path is a function `QueryState → one score per message` with a name (the one vocabulary of the read
side: settings, `paths_available`, `channel_scores`, an item's `paths`, the XML context, ablations and eval
configs all use it), a default fusion weight, the phase it runs in, how fusion normalises it, and whether
the memory it reads was built for a reader. Adding a path is adding its function and one entry.

Phases run in order; a path reads the fused score of the phases before its own (`state.fused`), and the
paths of one phase see each other only through what they leave on the state, in registry order:

- MATCH — the question against memory: **lexical** (BM25 over each message with its neighbours' words),
  **session** (BM25 over whole conversations, so a message in a conversation about the question ranks above
  a stray match), **dense_message** / **dense_segment** (nearest messages and segments, vector indexes),
  **topic** (the question's nearest topics: their segments' messages, and their RELATED_TO concepts routed
  to the concept path), **concept** (concepts by their "{title}: {description}" vectors and by BM25 over
  titles, descriptions, aliases and their evidence messages in context, plus those routed from topics,
  lent more when their type is one the question's wording asks for (`question_types`); their EVIDENCE_FOR
  messages weighted by evidence confidence, and a hub concept's (many of them) by closeness to the question);
- LIFT — **speaker**: messages written by a participant the question names, only where a MATCH path found
  something (naming someone must not return everything they wrote);
- CONTEXT — **graph**: NEXT/PREVIOUS around the strongest fused messages lend them part of their score
  (the answer after a question more);
- REVISE — **current_facts**: for the (subject, slot) facts the question is about, the latest evidence of
  the fact current at `as_of` (as believed at `believed_at`) is lifted just above the best-ranked message of
  a fact it replaced (a superseded fact never outranks the fact that replaced it; an abandoned ChatGPT
  branch never outranks the active one); it sees every other path's contribution (weight 1, `as_is`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from memory_query.adjacency import graph_loaded
from memory_query.evidence import TopicHit
from memory_query.facts import current_fact_lift, facts_built
from memory_query.fusion import as_is, max_scaled, pool_scaled, strongest, top_positions
from memory_query.question_types import asked_concept_types
from memory_query.reader import NAME_WORD, CorpusReader
from memory_query.state import ConceptMatch, QueryState


class Phase(IntEnum):
    MATCH = 1
    LIFT = 2
    CONTEXT = 3
    REVISE = 4


@dataclass(frozen=True)
class RetrievalPath:
    name: str
    phase: Phase
    weight: float  # default fusion weight (`RetrievalSettings.weights` overrides it)
    score: Callable[[QueryState], np.ndarray]
    available: Callable[[CorpusReader], bool]  # the memory this path reads was built for the reader
    normalise: Callable[[np.ndarray], np.ndarray] = max_scaled


# ------------------------------------------------------------------------------------------ MATCH
def lexical(state: QueryState) -> np.ndarray:
    doc_rows, _ = state.lexicon_rows
    scores = state.lexicon.messages.scores(state.tokens)
    if scores.size == state.n and state.reader.lexicon_in_table_order(doc_rows):
        return scores
    out = state.zeros()
    if doc_rows.size:
        known = doc_rows >= 0  # an index older than the source may name messages no longer there
        out[doc_rows[known]] = scores[known]
    return out


def session(state: QueryState) -> np.ndarray:
    _, conv_rows = state.lexicon_rows
    conv_scores = max_scaled(state.lexicon.conversations.scores(state.tokens))
    if not (conv_scores.size and state.n):
        return state.zeros()
    per_conv = np.where(conv_rows >= 0, conv_scores[np.maximum(conv_rows, 0)], 0.0).astype(np.float32)
    return per_conv[state.table.conversation]


def _nearest(state: QueryState, family: str, pool: int):
    """(ids, similarities) of the question's nearest items in a vector index, or None without one."""
    index = state.reader.vectors(family)
    if index is None or not index.size:
        return None
    found = index.search(state.vectors.of(index)[None, :], min(pool, index.size))
    return found.ids[0], found.scores[0]


def dense_message(state: QueryState) -> np.ndarray:
    found = _nearest(state, "messages", state.settings.dense_pool)
    if found is None:
        return state.zeros()
    index = state.table.index
    hits = [(index[i], s) for i, s in zip(*found, strict=True) if i in index]
    return pool_scaled(state.n, [p for p, _ in hits], [s for _, s in hits])


def dense_segment(state: QueryState) -> np.ndarray:
    found = _nearest(state, "segments", state.settings.dense_pool)
    if found is None:
        return state.zeros()
    members = state.reader.segment_messages()
    hits = [(mi, s) for sid, s in zip(*found, strict=True) for mi in members.get(sid, [])]
    return pool_scaled(state.n, [p for p, _ in hits], [s for _, s in hits])


def topic(state: QueryState) -> np.ndarray:
    out = state.zeros()
    topics = state.reader.topics()
    found = _nearest(state, "topics", state.settings.topics_used) if topics.ids else None
    if found is None:
        return out
    concepts, prior = state.concepts, state.concept_prior
    for tid, sim in zip(*found, strict=True):
        ti = topics.index.get(tid)
        if ti is None or sim <= 0:
            continue
        row = topics.rows[ti]
        state.topic_hits.append(TopicHit(tid, row["label"], float(sim), int(row["size"])))
        members = topics.members[ti]
        if members.size:
            out[members] = np.maximum(out[members], float(sim))
        for cid, weight in state.adjacency.related_concepts(tid):
            ci = concepts.index.get(cid)
            if ci is not None:
                prior[ci] += state.settings.topic_route_share * float(sim) * weight / 100.0
    return out


def _concept_scores(state: QueryState) -> np.ndarray:
    """Per concept: what topics routed to it, plus half its lexical similarity and `concept_vector_share` of
    its vector similarity."""
    concepts = state.concepts
    score = state.concept_prior.copy()
    if not concepts.ids:
        return score
    lexicon = state.lexicon.concepts
    if lexicon.n_docs:
        rows = concepts.rows_of(lexicon.ids)
        present = rows >= 0
        scaled = (0.5 * max_scaled(lexicon.scores(state.tokens))[present]).astype(score.dtype)
        np.add.at(score, rows[present], scaled)
    found = _nearest(state, "concepts", state.settings.concept_pool)
    if found is not None:
        hits = [(concepts.index[c], s) for c, s in zip(*found, strict=True) if c in concepts.index]
        share = state.settings.concept_vector_share
        score += share * pool_scaled(len(concepts.ids), [p for p, _ in hits], [s for _, s in hits])
    return score


def _asked_type_factor(state: QueryState) -> np.ndarray | float:
    """Per concept: 1 + `concept_type_boost` when its type is one the question asks about, else 1."""
    boost, asked = state.settings.concept_type_boost, asked_concept_types(state.question)
    if boost <= 0 or not asked:
        return 1.0
    return 1.0 + boost * np.isin(state.concepts.types, list(asked))


def concept(state: QueryState) -> np.ndarray:
    """The strongest concepts lend their score to their evidence messages, weighted by evidence confidence;
    a concept with many of them lends it by how close each is to the question (`_evidence_shares`)."""
    out = state.zeros()
    score = _concept_scores(state) * _asked_type_factor(state)
    top = [int(i) for i in top_positions(score, state.settings.concepts_used) if score[i] > 0]
    evidence = {ci: _visible_evidence(state, state.concepts.ids[ci]) for ci in top}
    ranked_from = state.settings.concept_evidence_ranked_from
    ranked = [found for found in evidence.values() if _is_hub(len(found), ranked_from)]
    closeness = _question_closeness(state, [mid for found in ranked for _, mid, _ in found])
    lent: dict[int, list[str]] = {}
    for ci, found in evidence.items():
        shares = _evidence_shares([mid for _, mid, _ in found], closeness, ranked_from)
        for (mi, _, confidence), share in zip(found, shares, strict=True):
            out[mi] = max(out[mi], float(score[ci]) * (0.5 + 0.5 * confidence) * share)
        # what the answer shows of a concept: the evidence it lent to, the question's pick of a hub first
        order = sorted(range(len(found)), key=lambda j: -shares[j])
        lent[ci] = [found[j][1] for j in order if shares[j] > 0]
    state.concept_match = ConceptMatch(score, top, lent)
    return out


def _visible_evidence(state: QueryState, concept_id: str) -> list[tuple[int, str, float]]:
    """(message position, message id, evidence confidence) of a concept's evidence the question may see."""
    index, visible = state.table.index, state.visible
    found = []
    for mid, confidence in state.adjacency.evidence_messages(concept_id):
        mi = index.get(mid)
        if mi is not None and visible[mi]:
            found.append((mi, mid, confidence))
    return found


def _question_closeness(state: QueryState, message_ids: list[str]) -> dict[str, float]:
    """Each message's cosine to the question, from the vectors the messages index holds (none without one)."""
    if not message_ids:
        return {}
    index = state.reader.vectors("messages")
    if index is None or not index.size:
        return {}
    known = [
        (mid, p) for mid, p in zip(message_ids, index.positions(message_ids), strict=True) if p is not None
    ]
    if not known:
        return {}
    sims = index.vectors([p for _, p in known]) @ state.vectors.of(index)
    return {mid: float(s) for (mid, _), s in zip(known, sims, strict=True)}


def _is_hub(evidence_count: int, ranked_from: int) -> bool:
    """A concept whose evidence the question ranks: `ranked_from` (> 0) or more visible evidence messages."""
    return 0 < ranked_from <= evidence_count


def _evidence_shares(message_ids: list[str], closeness: dict[str, float], ranked_from: int) -> list[float]:
    """The share of its concept's score each evidence message gets: all of it for a concept with fewer than
    `ranked_from` (0: any number) — a fact's evidence is the fact; for a hub concept (a person, a project),
    its evidence min-max scaled by closeness to the question, which picks what the question asks among the
    many things said of it (without closeness, all of it; a message the index does not hold yet, written after
    its last build, all of it too: nothing says it is far from the question)."""
    if not _is_hub(len(message_ids), ranked_from):
        return [1.0] * len(message_ids)
    sims = [closeness.get(mid) for mid in message_ids]
    known = [s for s in sims if s is not None]
    if not known or max(known) <= min(known):
        return [1.0] * len(message_ids)
    lo, hi = min(known), max(known)
    return [1.0 if s is None else (s - lo) / (hi - lo) for s in sims]


# ------------------------------------------------------------------------------------------ LIFT
def speaker(state: QueryState) -> np.ndarray:
    out = state.zeros()
    # names are capitalised: "Will" names a participant, "will" does not
    words = {word.lower() for word in NAME_WORD.findall(state.question) if word[0].isupper()}
    for name, rows in state.reader.speakers().items():
        if name in words:
            out[rows] = 1.0
    return out * (state.fused > 0)


# ------------------------------------------------------------------------------------------ CONTEXT
def graph(state: QueryState) -> np.ndarray:
    """NEXT/PREVIOUS around the strongest fused messages lend them part of their score; the message after
    a question among them is its answer and gets `answer_share` times as much."""
    out = state.zeros()
    fused, table, visible = state.fused, state.table, state.visible
    seeds = strongest(fused, state.settings.context_seeds)
    top = float(fused[seeds[0]]) if seeds else 0.0
    asks = _asks(state, seeds)
    for si in seeds:
        answer = state.adjacency.next_of.get(table.ids[si]) if si in asks else None
        for mid in state.adjacency.neighbours_in_time(table.ids[si]):
            mi = table.index.get(mid)
            if mi is not None and visible[mi]:
                lent = float(fused[si]) / top * (state.settings.answer_share if mid == answer else 1.0)
                out[mi] = max(out[mi], lent)
    return out


def _asks(state: QueryState, seeds: list[int]) -> set[int]:
    """The seeds that end by asking something (read from the source, a few messages per question)."""
    ids = [state.table.ids[i] for i in seeds]
    texts = state.reader.message_texts(ids)
    return {
        i for i, mid in zip(seeds, ids, strict=True) if texts.get(mid, ("", {}))[0].rstrip().endswith("?")
    }


# ------------------------------------------------------------------------------------------ availability
def _lexical_index_built(reader: CorpusReader) -> bool:
    return reader.lexicon()[1]  # False: BM25 built from the source on the fly, the paths still run


def _vectors_built(family: str) -> Callable[[CorpusReader], bool]:
    def built(reader: CorpusReader) -> bool:
        index = reader.vectors(family)
        return index is not None and index.size > 0

    return built


def _topics_built(reader: CorpusReader) -> bool:
    return _vectors_built("topics")(reader) and bool(reader.topics().ids)


def _concepts_built(reader: CorpusReader) -> bool:
    return bool(reader.concepts().ids)


def _speakers_named(reader: CorpusReader) -> bool:
    return bool(reader.speakers())


def _graph_loaded(reader: CorpusReader) -> bool:
    return graph_loaded(reader)  # False: the same walks over the tables the graph is loaded from


REGISTRY: tuple[RetrievalPath, ...] = (
    RetrievalPath("lexical", Phase.MATCH, 1.0, lexical, _lexical_index_built),
    RetrievalPath("session", Phase.MATCH, 0.3, session, _lexical_index_built),
    RetrievalPath("dense_message", Phase.MATCH, 0.3, dense_message, _vectors_built("messages"), as_is),
    RetrievalPath("dense_segment", Phase.MATCH, 0.2, dense_segment, _vectors_built("segments"), as_is),
    # topic members as such: off by default (on LoCoMo dev, boosting every message of the nearest topics
    # cost 0.007 recall_frac@5); topics still route to their RELATED_TO concepts, which feed the concept path
    RetrievalPath("topic", Phase.MATCH, 0.0, topic, _topics_built),
    RetrievalPath("concept", Phase.MATCH, 0.4, concept, _concepts_built),
    # on LoCoMo dev turn recall_frac@5 0.686 → 0.695 / 0.710 / 0.721 / 0.725 at 0.05 / 0.2 / 0.5 / 0.6,
    # 0.720 at 1.0: a plateau
    RetrievalPath("speaker", Phase.LIFT, 0.5, speaker, _speakers_named, as_is),
    # 0.1 → 0.2 with the answer share (LoCoMo conv-26, tune): recall_frac@5 0.712 → 0.717
    RetrievalPath("graph", Phase.CONTEXT, 0.2, graph, _graph_loaded, as_is),
    RetrievalPath("current_facts", Phase.REVISE, 1.0, current_fact_lift, facts_built, as_is),
)
PATH_NAMES: tuple[str, ...] = tuple(p.name for p in REGISTRY)

"""`query_memory`: hierarchical retrieval over a corpus's built memory, fused with raw-source search.

Paths, each a score per message, fused by configurable weights (each path is normalised to [0, 1]):

- **topic** — topic entry: the question's nearest topics (topic index); their segments' messages, and their
  RELATED_TO concepts (weighted) handed to concept retrieval;
- **concept** — concept retrieval: concepts by their "{title}: {description}" vectors and by lexical match
  of title, description and aliases; their EVIDENCE_FOR messages, weighted by evidence confidence;
- **graph** — graph synthesis: the walks above plus NEXT/PREVIOUS around the strongest messages (the
  graph store when loaded, else the tables it is loaded from);
- **dense** — the question's nearest messages and segments (vector indexes);
- **lexical** — BM25 over each message with its neighbours' words, and **session**: BM25 over whole
  conversations, so a message in a conversation about the question ranks above a stray match;
- **speaker** — messages written by a participant the question names (a capitalised first name of an
  author; role-like authors such as "user" or "assistant" are never names).

A part of memory that is missing (no graph, no vector index, no concepts) contributes nothing and the rest
still answers from the source; the lexical path is rebuilt from SQLite when its index file is absent.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np

from memory_core.lexical import tokenize
from memory_core.store.db import CorpusStore, MemoryHome
from memory_query.adjacency import adjacency_for
from memory_query.evidence import (
    EXCERPT_CHARS,
    ConceptHit,
    EvidenceItem,
    MemoryAnswer,
    ReactionHit,
    TopicHit,
    render_context,
)
from memory_query.reader import NAME_WORD, CorpusReader, embedder_for_index

PATHS = ("lexical", "session", "dense", "concept", "topic", "graph", "speaker")


@dataclass(frozen=True)
class RetrievalWeights:
    lexical: float = 1.0
    session: float = 0.3
    dense_message: float = 0.3
    dense_segment: float = 0.2
    concept: float = 0.4
    # topic members as such: off by default (on LoCoMo dev, boosting every message of the nearest topics cost
    # 0.007 recall_frac@5); topics still route to their RELATED_TO concepts, which feed the concept path
    topic: float = 0.0
    graph: float = 0.1  # NEXT/PREVIOUS context of the strongest messages
    # messages written by a participant the question names ("What did Caroline paint?"); on LoCoMo dev turn
    # recall_frac@5 0.686 → 0.695 / 0.710 / 0.721 / 0.725 at 0.05 / 0.2 / 0.5 / 0.6, 0.720 at 1.0: a plateau
    speaker: float = 0.5


@dataclass(frozen=True)
class RetrievalSettings:
    weights: RetrievalWeights = field(default_factory=RetrievalWeights)
    dense_pool: int = 200  # nearest messages / segments taken from each vector index
    concept_pool: int = 50
    concepts_used: int = 30  # concepts whose evidence is scored
    topics_used: int = 3
    context_seeds: int = 5  # strongest messages whose neighbours in time get the graph boost
    path_floor: float = 0.05  # a path "found" a message when its normalised score is at least this


# ------------------------------------------------------------------------------------------ readers
_READERS: OrderedDict[tuple[str, str], CorpusReader] = OrderedDict()
MAX_OPEN_READERS = 16  # corpora kept loaded per process; the least recently used one is closed


def reader_for(corpus: str | CorpusStore, home: MemoryHome | str | None = None) -> CorpusReader:
    """A cached reader per corpus (a long-lived process loads each corpus's memory once)."""
    if isinstance(corpus, CorpusStore):
        store = corpus
    else:
        home = home if isinstance(home, MemoryHome) else MemoryHome.resolve(home)
        store = home.corpus(corpus)
    key = (str(store.home.root), store.name)
    reader = _READERS.get(key)
    if reader is None or reader.store.home != store.home:
        reader = _READERS[key] = CorpusReader(store)
    _READERS.move_to_end(key)
    while len(_READERS) > MAX_OPEN_READERS:
        _, evicted = _READERS.popitem(last=False)
        evicted.close()
    return reader


# ------------------------------------------------------------------------------------------ helpers
def _normalise(scores: np.ndarray) -> np.ndarray:
    top = float(scores.max()) if scores.size else 0.0
    return scores / top if top > 0 else scores


def _dense_scores(n: int, positions: list[int], sims: list[float]) -> np.ndarray:
    """Similarities of the retrieved pool rescaled to (0, 1] (the pool's weakest maps to ~0)."""
    out = np.zeros(n, dtype=np.float32)
    if not positions:
        return out
    sims_arr = np.asarray(sims, dtype=np.float32)
    lo, hi = float(sims_arr.min()), float(sims_arr.max())
    scaled = (sims_arr - lo) / (hi - lo) if hi > lo else np.ones_like(sims_arr)
    np.maximum.at(out, np.asarray(positions, dtype=np.int64), scaled)
    return out


@dataclass
class _Query:
    text: str
    tokens: list[str]
    vectors: dict[str, np.ndarray] = field(default_factory=dict)  # per embedding model

    def vector(self, index) -> np.ndarray:
        model = index.meta.get("model", "")
        if model not in self.vectors:
            self.vectors[model] = embedder_for_index(index).embed([self.text])[0]
        return self.vectors[model]


# ------------------------------------------------------------------------------------------ query
def query_memory(
    question: str,
    corpus: str | CorpusStore,
    k: int = 10,
    as_of: datetime | None = None,
    scope=None,
    roles: tuple[str, ...] | None = None,
    psychological_access: bool = False,
    home: MemoryHome | str | None = None,
    settings: RetrievalSettings | None = None,
) -> MemoryAnswer:
    """Ranked, cited evidence for `question` from `corpus`, as memory stood at `as_of` (default: now).

    `roles` keeps only messages of those roles; `scope` (a `memory_query.scoping.Scope`) removes every id
    outside the allowed sessions before anything is returned; reflective data (user reactions) is included
    only with `psychological_access=True`.
    """
    if scope is not None:
        from memory_query.scoping import scoped_query

        return scoped_query(
            question,
            corpus,
            scope,
            k=k,
            as_of=as_of,
            roles=roles,
            psychological_access=psychological_access,
            home=home,
            settings=settings,
        )
    reader = reader_for(corpus, home)
    return rank(
        reader,
        question,
        k,
        as_of=as_of,
        roles=roles,
        psychological_access=psychological_access,
        settings=settings,
    )


def rank(
    reader: CorpusReader,
    question: str,
    k: int,
    as_of: datetime | None = None,
    roles: tuple[str, ...] | None = None,
    psychological_access: bool = False,
    settings: RetrievalSettings | None = None,
) -> MemoryAnswer:
    settings = settings or RetrievalSettings()
    w = settings.weights
    clock = {"start": time.perf_counter()}

    def lap(name: str) -> None:
        clock[name] = time.perf_counter()

    table = reader.messages()
    n = len(table)
    query = _Query(question, tokenize(question))
    mask = np.ones(n, dtype=bool)
    if as_of is not None:
        mask &= table.created_at <= np.datetime64(as_of.replace(tzinfo=None), "us")
    if roles:
        mask &= np.isin(table.role, list(roles))
    paths = {p: np.zeros(n, dtype=np.float32) for p in PATHS}
    available = {"graph": False, "vector": False, "lexical_index": False, "concepts": False, "topics": False}

    # raw source: lexical over messages in context, and over whole conversations
    lexicon, from_index = reader.lexicon()
    available["lexical_index"] = from_index
    doc_rows, conv_rows = reader.lexicon_alignment()
    lex = lexicon.messages.scores(query.tokens)
    if doc_rows.size:
        known = doc_rows >= 0  # an index older than the source may name messages no longer there
        paths["lexical"][doc_rows[known]] = lex[known]
    conv_scores = _normalise(lexicon.conversations.scores(query.tokens))
    if conv_scores.size and n:
        per_conv = np.where(conv_rows >= 0, conv_scores[np.maximum(conv_rows, 0)], 0.0).astype(np.float32)
        paths["session"] = per_conv[table.conversation]
    lap("lexical")

    # vectors: nearest messages and segments
    dense_message = np.zeros(n, dtype=np.float32)
    dense_segment = np.zeros(n, dtype=np.float32)
    index = reader.vectors("messages")
    if index is not None and index.size:
        available["vector"] = True
        found = index.search(query.vector(index)[None, :], min(settings.dense_pool, index.size))
        pos = [table.index[i] for i in found.ids[0] if i in table.index]
        sims = [s for i, s in zip(found.ids[0], found.scores[0], strict=True) if i in table.index]
        dense_message = _dense_scores(n, pos, sims)
    index = reader.vectors("segments")
    if index is not None and index.size:
        available["vector"] = True
        found = index.search(query.vector(index)[None, :], min(settings.dense_pool, index.size))
        seg_members = reader.segment_messages()
        pos, sims = [], []
        for sid, sim in zip(found.ids[0], found.scores[0], strict=True):
            for mi in seg_members.get(sid, []):
                pos.append(mi)
                sims.append(sim)
        dense_segment = _dense_scores(n, pos, sims)
    paths["dense"] = np.maximum(dense_message, dense_segment)
    lap("dense")

    # topic entry → concept retrieval → evidence (graph synthesis)
    concepts = reader.concepts()
    adjacency = adjacency_for(reader)
    available["graph"] = adjacency.source == "graph"
    concept_score = np.zeros(len(concepts.ids), dtype=np.float32)
    topic_hits: list[TopicHit] = []
    topics = reader.topics()
    topic_index = reader.vectors("topics")
    if topic_index is not None and topic_index.size and topics.ids:
        available["topics"] = True
        found = topic_index.search(
            query.vector(topic_index)[None, :], min(settings.topics_used, topic_index.size)
        )
        for tid, sim in zip(found.ids[0], found.scores[0], strict=True):
            ti = topics.index.get(tid)
            if ti is None or sim <= 0:
                continue
            topic_hits.append(
                TopicHit(tid, topics.rows[ti]["label"], float(sim), int(topics.rows[ti]["size"]))
            )
            members = topics.members[ti]
            if members.size:
                paths["topic"][members] = np.maximum(paths["topic"][members], float(sim))
            for cid, weight in adjacency.related_concepts(tid):
                ci = concepts.index.get(cid)
                if ci is not None:
                    concept_score[ci] += 0.5 * float(sim) * weight / 100.0
    if concepts.ids:
        available["concepts"] = True
        lexical_concepts = _normalise(lexicon.concepts.scores(query.tokens))
        if lexicon.concepts.n_docs:
            for cid, s in zip(lexicon.concepts.ids, lexical_concepts, strict=True):
                ci = concepts.index.get(cid)
                if ci is not None:
                    concept_score[ci] += 0.5 * float(s)
        concept_index = reader.vectors("concepts")
        if concept_index is not None and concept_index.size:
            found = concept_index.search(
                query.vector(concept_index)[None, :], min(settings.concept_pool, concept_index.size)
            )
            cpos = [concepts.index[c] for c in found.ids[0] if c in concepts.index]
            csims = [s for c, s in zip(found.ids[0], found.scores[0], strict=True) if c in concepts.index]
            concept_score += 0.5 * _dense_scores(len(concepts.ids), cpos, csims)
    top_concepts = [
        int(i) for i in np.argsort(-concept_score)[: settings.concepts_used] if concept_score[i] > 0
    ]
    concept_evidence_ids: dict[int, list[str]] = {}
    for ci in top_concepts:
        found_ids = []
        for mid, conf in adjacency.evidence_messages(concepts.ids[ci]):
            mi = table.index.get(mid)
            if mi is None or not mask[mi]:
                continue
            value = float(concept_score[ci]) * (0.5 + 0.5 * conf)
            paths["concept"][mi] = max(paths["concept"][mi], value)
            found_ids.append(mid)
        concept_evidence_ids[ci] = found_ids
    lap("concepts")

    for name in ("lexical", "session", "concept", "topic"):
        paths[name] = _normalise(paths[name])
    fused = (
        w.lexical * paths["lexical"]
        + w.session * paths["session"]
        + w.dense_message * dense_message
        + w.dense_segment * dense_segment
        + w.concept * paths["concept"]
        + w.topic * paths["topic"]
    )
    if w.speaker > 0 and n:
        # names are capitalised: "Will" names a participant, "will" does not. Only messages another path
        # found are lifted: naming someone must not fill the results with everything they ever wrote
        words = {word.lower() for word in NAME_WORD.findall(question) if word[0].isupper()}
        for name, rows in reader.speakers().items():
            if name in words:
                paths["speaker"][rows] = 1.0
        paths["speaker"] *= fused > 0
        fused = fused + w.speaker * paths["speaker"]
    fused = np.where(mask, fused, -np.inf)
    # graph synthesis: the strongest messages lend context to their neighbours in time
    if w.graph > 0 and n:
        seeds = [
            int(i)
            for i in np.argsort(-fused)[: settings.context_seeds]
            if np.isfinite(fused[i]) and fused[i] > 0
        ]
        top = float(fused[seeds[0]]) if seeds else 0.0
        for si in seeds:
            for mid in adjacency.neighbours_in_time(table.ids[si]):
                mi = table.index.get(mid)
                if mi is not None and mask[mi]:
                    paths["graph"][mi] = max(paths["graph"][mi], float(fused[si]) / top)
        fused = np.where(mask, fused + w.graph * paths["graph"], -np.inf)
    lap("fuse")

    order = [int(i) for i in np.argsort(-fused)[:k] if np.isfinite(fused[i]) and fused[i] > 0]
    items = _items(
        reader,
        table,
        order,
        fused,
        paths,
        dense_message,
        dense_segment,
        concepts,
        concept_evidence_ids,
        settings,
    )
    concept_hits = _concept_hits(concepts, top_concepts, concept_score, concept_evidence_ids)
    reflective = _reactions(reader, [i.message_id for i in items]) if psychological_access else []
    lap("assemble")
    answer = MemoryAnswer(
        question=question,
        corpus=reader.store.name,
        as_of=as_of,
        items=items,
        concepts=concept_hits,
        topics=topic_hits,
        reflective=reflective,
        context="",
        paths_available=available,
        timings_ms={},
    )
    answer.context = render_context(answer, include_reflective=psychological_access)
    marks = list(clock.items())
    answer.timings_ms = {name: round((t - marks[i][1]) * 1000, 2) for i, (name, t) in enumerate(marks[1:])}
    answer.timings_ms["total"] = round((time.perf_counter() - clock["start"]) * 1000, 2)
    return answer


def _items(
    reader, table, order, fused, paths, dense_message, dense_segment, concepts, concept_evidence_ids, settings
) -> list[EvidenceItem]:
    texts = reader.message_texts([table.ids[i] for i in order])
    # the concept spans inside each returned message, for a precise excerpt
    spans: dict[int, tuple[int, int, str]] = {}
    for ci, found_ids in concept_evidence_ids.items():
        for mi, _conf, start, end in concepts.evidence[ci]:
            if table.ids[mi] in found_ids and mi not in spans:
                spans[mi] = (start, end, concepts.ids[ci])
    w = settings.weights
    weight_of = {
        "lexical": w.lexical,
        "session": w.session,
        "dense": max(w.dense_message, w.dense_segment),
        "concept": w.concept,
        "topic": w.topic,
        "graph": w.graph,
        "speaker": w.speaker,
    }
    items = []
    for mi in order:
        mid = table.ids[mi]
        text, _attrs = texts.get(mid, ("", {}))
        start, end = _excerpt_window(len(text), spans.get(mi))
        channel = {
            "lexical": float(paths["lexical"][mi]),
            "session": float(paths["session"][mi]),
            "dense_message": float(dense_message[mi]),
            "dense_segment": float(dense_segment[mi]),
            "concept": float(paths["concept"][mi]),
            "topic": float(paths["topic"][mi]),
            "graph": float(paths["graph"][mi]),
            "speaker": float(paths["speaker"][mi]),
        }
        found_by = [p for p in PATHS if weight_of[p] > 0 and paths[p][mi] >= settings.path_floor]
        items.append(
            EvidenceItem(
                message_id=mid,
                conversation_id=table.conv_ids[table.conversation[mi]],
                conversation_ref=table.conv_refs[table.conversation[mi]],
                source_ref=table.source_ref[mi],
                role=str(table.role[mi]),
                author=table.author[mi],
                created_at=table.created_at[mi].astype("datetime64[us]").astype(datetime),
                time_derived=bool(table.time_derived[mi]),
                text=text[start:end],
                span_start=start,
                span_end=end,
                score=float(fused[mi]),
                paths=found_by,
                channel_scores={k: round(v, 4) for k, v in channel.items() if v},
                concept_ids=[concepts.ids[ci] for ci, ids in concept_evidence_ids.items() if mid in ids],
            )
        )
    return items


def _excerpt_window(length: int, span: tuple | None) -> tuple[int, int]:
    """The excerpt of a message to show: all of it when short, else a window around the matched concept
    span (or the start)."""
    if length <= EXCERPT_CHARS:
        return 0, length
    if span is None:
        return 0, EXCERPT_CHARS
    centre = (span[0] + span[1]) // 2
    start = max(0, min(centre - EXCERPT_CHARS // 2, length - EXCERPT_CHARS))
    return start, start + EXCERPT_CHARS


def _concept_hits(
    concepts, top_concepts, concept_score, concept_evidence_ids, limit: int = 8
) -> list[ConceptHit]:
    hits = []
    for ci in top_concepts[:limit]:
        row = concepts.rows[ci]
        hits.append(
            ConceptHit(
                concept_id=row["concept_id"],
                title=row["title"],
                type=row["type"],
                description=row["description"],
                confidence=float(row["confidence"]),
                trust=row["trust"],
                first_seen=row["first_seen"],
                last_seen=row["last_seen"],
                score=float(concept_score[ci]),
                evidence_message_ids=concept_evidence_ids.get(ci, [])[:10],
                paths=["concept"],
            )
        )
    return [h for h in hits if h.evidence_message_ids]


def _reactions(reader: CorpusReader, message_ids: list[str]) -> list[ReactionHit]:
    from sqlalchemy import select

    from memory_core.store.schema import user_reactions

    if not message_ids:
        return []
    with reader.store.reflective.connect() as conn:
        rows = (
            conn.execute(select(user_reactions).where(user_reactions.c.message_id.in_(message_ids)))
            .mappings()
            .all()
        )
    return [
        ReactionHit(
            reaction_id=r["reaction_id"],
            message_id=r["message_id"],
            state=r["state"] if r["state"] != "Other" else f"Other:{r['state_raw']}",
            intensity=float(r["intensity"]),
            valence=r["valence"],
            epistemic_status=r["epistemic_status"],
            evidence_text=r["evidence_text"],
            occurred_at=r["occurred_at"],
            topic_id=r["topic_id"],
        )
        for r in rows
    ]


def with_weights(settings: RetrievalSettings | None = None, **weights: float) -> RetrievalSettings:
    """Settings with some path weights changed (for ablations and tuning)."""
    settings = settings or RetrievalSettings()
    return replace(settings, weights=replace(settings.weights, **weights))

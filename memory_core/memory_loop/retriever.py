"""Retriever of the memory loop: for a candidate, the top-k existing concepts of the corpus.

Four signals, each in [0, 1], fused by a weighted sum whose components are kept for the ActionLog:

- similarity: cosine between the candidate's key and the concept's key ("{title}: {description}");
- lexical: 1.0 when a title/alias names the same thing (`names.name_keys`: case, punctuation, spacing,
  alias table, acronyms - "Postgres" = "PostgreSQL"), else the best token Jaccard of their names;
- graph: 1.0 when the concept already has evidence in the candidate's segment, `conversation_graph` when
  it has evidence in the same conversation, else 0 (the neighbourhood through segments/conversations);
- temporal: 1.0 inside the concept's [first_seen, last_seen], decaying exponentially with the gap.

Everything lives in memory and grows as concepts are created: a float32 matrix of concept vectors
(amortised doubling), an alias → concepts map, and segment / conversation → concepts maps. A query is one
matrix-vector product plus work on a short list, never a database scan. Past `exact_up_to` concepts the
shortlist of a batch comes from an inverted-file index over the matrix (memory_loop/shortlist.py), with
its cosines recomputed exactly.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory_core.concepts.names import matching_keys, name_keys, normalise_name
from memory_core.memory_loop.shortlist import InvertedShortlist, Nearest

_STOPWORDS = frozenset(
    "a an and the of to in on for with my our your his her their its at by from is".split()
)


@dataclass(frozen=True)
class RetrieverWeights:
    similarity: float = 0.65
    lexical: float = 0.20
    graph: float = 0.10
    temporal: float = 0.05
    top_k: int = 8
    shortlist: int = 16  # nearest concepts by cosine considered before fusion
    # past this many concepts a batch's shortlist is approximate (an inverted file probing `nprobe` lists):
    # the exact one costs candidates × concepts; no dev conversation or haystack comes near it
    exact_up_to: int = 20_000
    nprobe: int = 32
    conversation_graph: float = 0.5
    temporal_scale_days: float = 30.0


@dataclass
class RetrievalHit:
    concept_id: str
    score: float
    similarity: float
    lexical: float
    graph: float
    temporal: float

    def components(self) -> dict[str, float]:
        return {
            "concept_id": self.concept_id,
            "score": round(self.score, 4),
            "similarity": round(self.similarity, 4),
            "lexical": round(self.lexical, 4),
            "graph": round(self.graph, 4),
            "temporal": round(self.temporal, 4),
        }


def _tokens(name: str) -> frozenset[str]:
    return frozenset(t for t in name.split() if t not in _STOPWORDS) or frozenset(name.split())


@dataclass
class _Entry:
    row: int
    type: str
    names: list[str]
    tokens: list[frozenset[str]]
    keys: frozenset[str]
    first_seen: datetime
    last_seen: datetime
    segments: set[str] = field(default_factory=set)
    conversations: Counter = field(default_factory=Counter)


class ConceptIndex:
    """The in-memory view of a corpus's live concepts that the retriever queries."""

    def __init__(self, weights: RetrieverWeights | None = None, capacity: int = 1024):
        self.weights = weights or RetrieverWeights()
        self._capacity = max(capacity, 1)
        self._matrix: np.ndarray | None = None  # sized by the first vector (providers differ in dim)
        self._ids: list[str] = []
        # batch_similarities() snapshot: rows it covered, rows whose vector changed since
        self._snapshot_rows = 0
        self._stale_rows: set[int] = set()  # refined since the last look
        self._unsynced: set[int] = set()  # refined since the inverted file's last sync
        self._looks = 0  # batch looks so far: a `Nearest` is good for its own look only
        self._entries: dict[str, _Entry] = {}
        self._by_name: dict[str, set[str]] = defaultdict(set)
        self._by_key: dict[str, set[str]] = defaultdict(set)  # canonical name key → concepts
        self._by_segment: dict[str, set[str]] = defaultdict(set)
        self._inverted: InvertedShortlist | None = None
        self.approximate_looks = 0  # batches whose shortlist came from the inverted file

    def __len__(self) -> int:
        return len(self._ids)

    def __contains__(self, concept_id: str) -> bool:
        return concept_id in self._entries

    @property
    def matrix(self) -> np.ndarray:
        if self._matrix is None:
            return np.zeros((0, 0), dtype=np.float32)
        return self._matrix[: len(self._ids)]

    # ---------------------------------------------------------------------------------- updates
    def add(
        self,
        concept_id: str,
        vector: np.ndarray,
        type: str,
        names: list[str],
        first_seen: datetime,
        last_seen: datetime,
    ) -> None:
        if concept_id in self._entries:
            raise ValueError(f"concept {concept_id} is already indexed")
        row = len(self._ids)
        if self._matrix is None:
            self._matrix = np.zeros((self._capacity, len(vector)), dtype=np.float32)
        if row == self._matrix.shape[0]:
            grown = np.zeros((self._matrix.shape[0] * 2, self._matrix.shape[1]), dtype=np.float32)
            grown[:row] = self._matrix
            self._matrix = grown
        self._matrix[row] = vector
        self._ids.append(concept_id)
        self._entries[concept_id] = _Entry(row, type, [], [], frozenset(), first_seen, last_seen)
        self.set_names(concept_id, names)

    def set_vector(self, concept_id: str, vector: np.ndarray) -> None:
        row = self._entries[concept_id].row
        self._matrix[row] = vector
        self._stale_rows.add(row)
        self._unsynced.add(row)

    def set_names(self, concept_id: str, names: list[str]) -> None:
        entry = self._entries[concept_id]
        for old in entry.names:
            self._by_name[old].discard(concept_id)
        for old in entry.keys:
            self._by_key[old].discard(concept_id)
        entry.names = list(dict.fromkeys(n for n in (normalise_name(x) for x in names) if n))
        entry.tokens = [_tokens(n) for n in entry.names]
        entry.keys = frozenset(k for x in names for k in name_keys(x))
        for name in entry.names:
            self._by_name[name].add(concept_id)
        for key in entry.keys:
            self._by_key[key].add(concept_id)

    def touch(self, concept_id: str, seen_at: datetime, segment_id: str, conversation_id: str) -> None:
        """Record a piece of evidence: time bounds and the segment/conversation neighbourhood."""
        entry = self._entries[concept_id]
        entry.first_seen = min(entry.first_seen, seen_at)
        entry.last_seen = max(entry.last_seen, seen_at)
        entry.segments.add(segment_id)
        entry.conversations[conversation_id] += 1
        self._by_segment[segment_id].add(concept_id)

    # ---------------------------------------------------------------------------------- queries
    def type_of(self, concept_id: str) -> str:
        return self._entries[concept_id].type

    def row_of(self, concept_id: str) -> int:
        """The concept's row of `matrix`."""
        return self._entries[concept_id].row

    def id_at(self, row: int) -> str:
        """The concept of a row of `matrix`."""
        return self._ids[row]

    def conversations_of(self, concept_id: str) -> set[str]:
        """The conversations the concept has evidence in."""
        return set(self._entries[concept_id].conversations)

    def has_evidence_in(self, concept_id: str, conversation_id: str) -> bool:
        """Whether the concept has evidence in this conversation (without copying the set of all of them:
        a concept told of in every conversation is asked once per attach)."""
        return conversation_id in self._entries[concept_id].conversations

    def concepts_named(self, name: str) -> set[str]:
        return set(self._by_name.get(normalise_name(name), ()))

    def _lexical(
        self,
        names: list[str],
        tokens: list[frozenset[str]],
        entry: _Entry,
        keys: frozenset[str] = frozenset(),
    ) -> float:
        if any(n in entry.names for n in names) or keys & entry.keys:
            return 1.0
        best = 0.0
        for a in tokens:
            for b in entry.tokens:
                union = len(a | b)
                if union:
                    best = max(best, len(a & b) / union)
        return best

    def _temporal(self, seen_at: datetime, entry: _Entry) -> float:
        if entry.first_seen <= seen_at <= entry.last_seen:
            return 1.0
        gap = entry.first_seen - seen_at if seen_at < entry.first_seen else seen_at - entry.last_seen
        return math.exp(-gap.total_seconds() / 86400.0 / self.weights.temporal_scale_days)

    def batch_similarities(self, vectors: np.ndarray) -> np.ndarray | list[Nearest]:
        """Cosines of a batch of candidates to every concept indexed now, as one matrix product (the concept
        matrix is read once per batch, not once per candidate); pass row i to `retrieve` as `presims`. Past
        `exact_up_to` concepts, each candidate's approximate nearest rows instead (`Nearest`)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        self._looks += 1
        self._snapshot_rows = len(self._ids)
        self._stale_rows = set()
        if self.approximate_now():
            found = self._inverted_now().search(vectors, self.weights.shortlist)[1]
            self.approximate_looks += 1
            return [Nearest(rows, self._looks) for rows in found]
        if not self._ids:
            return np.zeros((len(vectors), 0), dtype=np.float32)
        return vectors @ self.matrix.T

    def approximate_now(self) -> bool:
        """Whether a batch's look now comes from the inverted file (past `exact_up_to` concepts)."""
        return len(self._ids) > self.weights.exact_up_to

    def _inverted_now(self) -> InvertedShortlist:
        """The inverted file, caught up with the matrix (trained again once the matrix has doubled)."""
        if self._inverted is None or self._inverted.stale(len(self._ids)):
            self._inverted = InvertedShortlist(self.matrix, self.weights.nprobe)
        else:
            self._inverted.sync(self.matrix, self._unsynced)
        self._unsynced = set()
        return self._inverted

    def _similarities(self, vector: np.ndarray, presims: np.ndarray | None) -> np.ndarray:
        if presims is None:
            return self.matrix @ vector
        n, snap = len(self._ids), self._snapshot_rows
        sims = np.empty(n, dtype=np.float32)
        sims[:snap] = presims[:snap]
        if n > snap:  # concepts created since the snapshot
            sims[snap:] = self._matrix[snap:n] @ vector
        for row in self._stale_rows:  # concepts refined since the snapshot
            sims[row] = self._matrix[row] @ vector
        return sims

    def _exact_shortlist(
        self, vector: np.ndarray, presims: np.ndarray | None
    ) -> tuple[list[int], np.ndarray]:
        sims = self._similarities(vector, presims)
        n, size = len(self._ids), self.weights.shortlist
        rows = np.argpartition(-sims, size - 1)[:size] if n > size else np.arange(n)
        return rows.tolist(), sims

    def _approximate_shortlist(
        self, vector: np.ndarray, nearest: Nearest
    ) -> tuple[list[int], dict[int, float]]:
        """The batch's nearest rows, the concepts created or refined since (their place in the inverted file
        is not the one searched), ranked by exact cosines."""
        if nearest.look != self._looks:
            raise ValueError(
                "a shortlist is good for the look that made it (rows created since a later look are not in it)"
            )
        n, snap = len(self._ids), self._snapshot_rows
        rows = np.unique(
            np.concatenate(
                [
                    nearest.rows[nearest.rows >= 0],
                    np.arange(snap, n, dtype=np.int64),
                    np.fromiter(self._stale_rows, dtype=np.int64, count=len(self._stale_rows)),
                ]
            )
        )
        exact = self._matrix[rows] @ vector
        keep = np.argsort(-exact, kind="stable")[: self.weights.shortlist]
        return rows[keep].tolist(), _ExactCosines(
            self._matrix, vector, dict(zip(rows.tolist(), exact.tolist(), strict=True))
        )

    def retrieve(
        self,
        vector: np.ndarray,
        names: list[str],
        seen_at: datetime,
        segment_id: str,
        conversation_id: str,
        k: int | None = None,
        presims: np.ndarray | Nearest | None = None,
    ) -> list[RetrievalHit]:
        """The top-k concepts by fused score (best first). `presims`: this candidate's row of
        `batch_similarities`, computed before later concepts of the batch were created or refined."""
        if not self._ids:
            return []
        w = self.weights
        vector = np.asarray(vector, dtype=np.float32)
        if isinstance(presims, Nearest):
            rows, sims = self._approximate_shortlist(vector, presims)
        else:
            rows, sims = self._exact_shortlist(vector, presims)
        pool = {self._ids[i] for i in rows}
        norm_names = [normalise_name(x) for x in names]
        norm_names = [x for x in norm_names if x]
        wanted = matching_keys(frozenset(k for x in names for k in name_keys(x)))
        for name in norm_names:  # exact title/alias matches always compete, however far in embedding space
            pool |= self._by_name.get(name, set())
        for key in wanted:  # and so do names of the same thing spelled otherwise ("Postgres" / "PostgreSQL")
            pool |= self._by_key.get(key, set())
        pool |= self._by_segment.get(segment_id, set())
        tokens = [_tokens(x) for x in norm_names]
        hits = []
        for cid in pool:
            entry = self._entries[cid]
            similarity = max(0.0, float(sims[entry.row]))
            lexical = self._lexical(norm_names, tokens, entry, wanted)
            if segment_id in entry.segments:
                graph = 1.0
            elif entry.conversations.get(conversation_id):
                graph = w.conversation_graph
            else:
                graph = 0.0
            temporal = self._temporal(seen_at, entry)
            score = w.similarity * similarity + w.lexical * lexical + w.graph * graph + w.temporal * temporal
            hits.append(RetrievalHit(cid, score, similarity, lexical, graph, temporal))
        hits.sort(key=lambda h: (-h.score, h.concept_id))
        return hits[: k or w.top_k]

    def max_similarity(self, vectors: np.ndarray, chunk: int = 4096) -> np.ndarray:
        """For each row of `vectors`, the best cosine to any indexed concept (0 when there are none); a chunk
        of rows at a time (a residual per mention of a 1M-message corpus against its concepts is tens of GB
        as one product), from the inverted file past `exact_up_to` concepts."""
        if len(self._ids) == 0 or len(vectors) == 0:
            return np.zeros(len(vectors), dtype=np.float32)
        vectors = np.asarray(vectors, dtype=np.float32)
        if self.approximate_now():
            return np.clip(self._inverted_now().search(vectors, 1)[0][:, 0], 0.0, 1.0)
        # equal parts of at most `chunk` rows: a part of one row would be a matrix-vector product, whose
        # rounding differs from the matrix product's
        parts = np.array_split(vectors, -(-len(vectors) // chunk))
        best = np.concatenate([(part @ self.matrix.T).max(axis=1) for part in parts])
        return np.clip(best, 0.0, 1.0)


class _ExactCosines(dict):
    """Cosines to concept rows: those of the shortlist, computed together; any other (a concept that
    competes by name or segment) on first use."""

    def __init__(self, matrix: np.ndarray, vector: np.ndarray, known: dict[int, float]):
        super().__init__(known)
        self._matrix, self._vector = matrix, vector

    def __missing__(self, row: int) -> float:
        self[row] = value = float(self._matrix[row] @ self._vector)
        return value

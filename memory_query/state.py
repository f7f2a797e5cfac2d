"""What one question's retrieval paths read and write (`QueryState`): the question (its words, its vectors
per embedding model), the messages it may see, each finished path's scores, the fused score of the finished
phases, and what a path hands to a later one (the topic path's concepts for the concept path; the concept
path's concepts for the answer)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from memory_core.lexical import CorpusLexicon, tokenize
from memory_query.adjacency import Adjacency, adjacency_for
from memory_query.evidence import TopicHit
from memory_query.reader import ConceptTable, CorpusReader, MessageTable, embedder_for_index

if TYPE_CHECKING:
    from memory_query.settings import RetrievalSettings


@dataclass
class QueryVectors:
    """The question embedded once per embedding model (indexes built by different models each get theirs)."""

    text: str
    by_model: dict[str, np.ndarray] = field(default_factory=dict)

    def of(self, index) -> np.ndarray:
        model = index.meta.get("model", "")
        if model not in self.by_model:
            self.by_model[model] = embedder_for_index(index).embed([self.text])[0]
        return self.by_model[model]


@dataclass
class ConceptMatch:
    """The concepts a question reached (concept path) and the evidence of theirs it may see."""

    score: np.ndarray  # per concept of the reader's concept table
    top: list[int]  # positions of the concepts whose evidence was scored, strongest first
    # concept position → the evidence message ids it lent its score to (the question may see them), the largest
    # share first: a hub concept's pick for the question leads
    evidence: dict[int, list[str]]


def visible_messages(
    table: MessageTable,
    as_of: datetime | None,
    roles: tuple[str, ...] | None,
    since: datetime | None = None,
) -> np.ndarray:
    """The messages a question may see: those written by `as_of` (time travel), not before `since` (a time
    range an agent searches inside) and of the given roles."""
    mask = np.ones(len(table), dtype=bool)
    if as_of is not None:
        mask &= table.created_at <= np.datetime64(as_of.replace(tzinfo=None), "us")
    if since is not None:
        mask &= table.created_at >= np.datetime64(since.replace(tzinfo=None), "us")
    if roles:
        mask &= np.isin(table.role, list(roles))
    return mask


class QueryState:
    """One question's retrieval in progress over one reader."""

    def __init__(
        self,
        reader: CorpusReader,
        question: str,
        settings: RetrievalSettings,
        visible: np.ndarray,
        *,
        as_of: datetime | None = None,
        believed_at: datetime | None = None,
    ):
        self.reader = reader
        self.question = question
        self.settings = settings
        #: valid time (what was true then) and system time (what memory believed then) of the question
        self.as_of = as_of
        self.believed_at = believed_at
        self.table = reader.messages()
        self.visible = visible
        self.tokens = tokenize(question)
        self.vectors = QueryVectors(question)
        #: each finished path's normalised score per message, as fused
        self.scores: dict[str, np.ndarray] = {}
        #: the fused score of the finished phases per message (-inf where not visible)
        self.fused = np.where(visible, np.float32(0.0), -np.inf).astype(np.float32)
        self.topic_hits: list[TopicHit] = []
        self.concept_match: ConceptMatch | None = None

    @property
    def n(self) -> int:
        return len(self.table)

    def zeros(self) -> np.ndarray:
        return np.zeros(self.n, dtype=np.float32)

    @cached_property
    def concepts(self) -> ConceptTable:
        """The concept table as this query reads it (one version for every path and the answer)."""
        return self.reader.concepts()

    @cached_property
    def lexicon(self) -> CorpusLexicon:
        return self.reader.lexicon()[0]

    @cached_property
    def lexicon_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """Message-table row per lexical message document, lexical conversation row per conversation."""
        return self.reader.lexicon_alignment()

    @cached_property
    def adjacency(self) -> Adjacency:
        return adjacency_for(self.reader)

    @cached_property
    def concept_prior(self) -> np.ndarray:
        """Per concept of the reader's concept table, the score routed to it before concept retrieval (the
        topic path adds its topics' RELATED_TO concepts here; zeros when no path routed any)."""
        return np.zeros(len(self.concepts.ids), dtype=np.float32)

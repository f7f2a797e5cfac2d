"""What Phase 0 triage reads: the live concepts, a sample of each one's evidence, who speaks in each
conversation, the topics (when the topics stages have run) and frequency statistics of the corpus.

Everything here only reads. Evidence is the concept's linked mentions (the candidates it absorbed): their
"{title}: {description}" keys are the texts the memory loop matched on and the purity metric scores, so
clustering them measures exactly what purity measures. A concept with more evidence than
`max_evidence` keeps a deterministic sample (the items with the smallest hash of their mention id).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
from sqlalchemy import select

from memory_core.concepts.names import normalise_name
from memory_core.concepts.store import read_concepts
from memory_core.embeddings.base import Embedder
from memory_core.gardener.common import MENTION_COLUMNS, named_participants
from memory_core.ontology.concepts import LIVE_STATES, ConceptHypothesis, concept_embedding_key
from memory_core.store.db import CorpusStore
from memory_core.store.schema import (
    mentions,
    messages,
    topic_concept_links,
    topic_segments,
    topics,
)

_CHUNK = 500
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
# topic links below this weight (0-100) are not counted as a concept's topic (docs/architecture.md §4.6 keeps > 20)
TOPIC_LINK_MIN_WEIGHT = 20.0


@dataclass(frozen=True)
class EvidenceItem:
    """One mention a concept absorbed."""

    mention_id: str
    message_id: str
    segment_id: str
    conversation_id: str
    surface: str
    title: str
    type: str
    description: str
    aliases: tuple[str, ...]
    confidence: float
    created_at: datetime

    @property
    def key(self) -> str:
        return concept_embedding_key(self.title, self.description)


@dataclass
class ConceptRecord:
    """A live concept as triage scores it: the concept, a sample of the mentions it absorbed, its topics."""

    concept: ConceptHypothesis
    evidence: list[EvidenceItem] = field(default_factory=list)  # sampled
    evidence_total: int = 0
    topics: set[str] = field(default_factory=set)

    @property
    def concept_id(self) -> str:
        return self.concept.concept_id

    @property
    def key(self) -> str:
        return self.concept.embedding_key

    @property
    def names(self) -> set[str]:
        c = self.concept
        return {n for n in (normalise_name(x) for x in (c.title, *c.aliases)) if n}

    @property
    def conversations(self) -> set[str]:
        return {e.conversation_id for e in self.evidence}

    @property
    def segments(self) -> set[str]:
        return {e.segment_id for e in self.evidence}

    @property
    def message_ids(self) -> list[str]:
        return list(dict.fromkeys(e.message_id for e in self.evidence))


@dataclass
class Inventory:
    corpus: str
    concepts: dict[str, ConceptRecord]
    participants: dict[str, frozenset[str]]  # conversation -> people speaking in it (empty: unnamed roles)
    topic_labels: dict[str, str]
    lowercase_counts: Counter  # word (lower case) -> occurrences written in lower case in the messages
    midsentence_capital_counts: Counter  # word (lower case) -> occurrences capitalised after a sentence start
    concept_ids: list[str] = field(default_factory=list)
    position: dict[str, int] = field(default_factory=dict)  # concept id -> row of concept_vectors
    concept_vectors: np.ndarray | None = None  # rows aligned with concept_ids, L2-normalised
    evidence_vectors: dict[str, np.ndarray] = field(default_factory=dict)  # concept -> (n_evidence, dim)

    @property
    def has_topics(self) -> bool:
        return bool(self.topic_labels)

    def people(self, record: ConceptRecord) -> frozenset[str]:
        out: set[str] = set()
        for conversation_id in record.conversations:
            out |= self.participants.get(conversation_id, frozenset())
        return frozenset(out)

    def centroid(self, concept_id: str) -> np.ndarray:
        vectors = self.evidence_vectors.get(concept_id)
        if vectors is None or not len(vectors):
            return self.concept_vectors[self.position[concept_id]]
        mean = vectors.mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean


def _sample_rank(mention_id: str) -> str:
    return hashlib.blake2b(mention_id.encode(), digest_size=8).hexdigest()


def load_inventory(
    store: CorpusStore, embedder: Embedder, max_evidence: int = 64, word_stats: bool = True
) -> Inventory:
    """Read everything triage scores, and embed concept keys and evidence keys (through the shared cache)."""
    with store.staging.connect() as conn:
        concepts = {cid: ConceptRecord(c) for cid, c in read_concepts(conn, states=LIVE_STATES).items()}
        by_concept: dict[str, list[EvidenceItem]] = defaultdict(list)
        for r in conn.execute(
            select(mentions.c.consolidated_id, *MENTION_COLUMNS).where(
                mentions.c.consolidated_id.is_not(None)
            )
        ):
            if r.consolidated_id not in concepts:
                continue
            by_concept[r.consolidated_id].append(
                EvidenceItem(
                    r.mention_id,
                    r.message_id,
                    r.segment_id,
                    r.conversation_id,
                    r.surface,
                    r.title,
                    r.type,
                    r.description,
                    tuple(r.aliases or ()),
                    float(r.confidence),
                    r.message_created_at,
                )
            )
        topic_labels = dict(conn.execute(select(topics.c.topic_id, topics.c.label)).all())
        concept_topics: dict[str, set[str]] = defaultdict(set)
        if topic_labels:
            for topic_id, concept_id in conn.execute(
                select(topic_concept_links.c.topic_id, topic_concept_links.c.concept_id).where(
                    topic_concept_links.c.weight > TOPIC_LINK_MIN_WEIGHT
                )
            ):
                concept_topics[concept_id].add(topic_id)
            segment_topic = dict(
                conn.execute(
                    select(topic_segments.c.segment_id, topic_segments.c.topic_id).where(
                        topic_segments.c.topic_id.is_not(None)
                    )
                ).all()
            )
        else:
            segment_topic = {}
    for cid, items in by_concept.items():
        record = concepts[cid]
        record.evidence_total = len(items)
        items.sort(key=lambda e: (e.created_at, e.mention_id))
        if len(items) > max_evidence:
            ranked = sorted((_sample_rank(e.mention_id), e.mention_id) for e in items)
            keep = {mention_id for _, mention_id in ranked[:max_evidence]}
            items = [e for e in items if e.mention_id in keep]
        record.evidence = items
        record.topics = concept_topics.get(cid, set()) | {
            segment_topic[e.segment_id] for e in items if e.segment_id in segment_topic
        }
    inventory = Inventory(
        corpus=store.name,
        concepts=concepts,
        participants=named_participants(store),
        topic_labels=topic_labels,
        lowercase_counts=Counter(),
        midsentence_capital_counts=Counter(),
    )
    if word_stats:
        _word_case_stats(store, inventory)
    _embed(inventory, embedder)
    return inventory


def _word_case_stats(store: CorpusStore, inventory: Inventory) -> None:
    """How one-word titles are written in the corpus: a word mostly written in lower case and capitalised
    only at sentence starts ("Perfect!", "Turn") is an ordinary word, not a name."""
    titles = [r.concept.title for r in inventory.concepts.values()]
    words = {normalise_name(t) for t in titles if " " not in t.strip() and t[:1].isupper()}
    if not words:
        return
    last = ""
    while True:  # messages a page at a time: never the whole corpus text in memory
        with store.source.connect() as conn:
            page = conn.execute(
                select(messages.c.message_id, messages.c.text)
                .where(messages.c.message_id > last)
                .order_by(messages.c.message_id)
                .limit(_CHUNK * 10)
            ).all()
        if not page:
            return
        for _, text in page:
            for match in _WORD.finditer(text):
                word = match.group()
                low = word.casefold()
                if low not in words:
                    continue
                if word[0].islower():
                    inventory.lowercase_counts[low] += 1
                elif not _sentence_start(text, match.start()):
                    inventory.midsentence_capital_counts[low] += 1
        last = page[-1][0]


def _sentence_start(text: str, pos: int) -> bool:
    before = text[:pos].rstrip(" \t\"'“(")
    return not before or before[-1] in ".!?\n:;"


def _embed(inventory: Inventory, embedder: Embedder) -> None:
    ids = list(inventory.concepts)
    inventory.concept_ids = ids
    inventory.position = {c: i for i, c in enumerate(ids)}
    keys = [inventory.concepts[c].key for c in ids]
    evidence_keys = sorted({e.key for c in ids for e in inventory.concepts[c].evidence})
    texts = list(dict.fromkeys([*keys, *evidence_keys]))
    if not texts:
        inventory.concept_vectors = np.zeros((0, getattr(embedder, "dim", 1)), dtype=np.float32)
        return
    vectors = np.concatenate([embedder.embed(texts[i : i + 2048]) for i in range(0, len(texts), 2048)])
    position = {t: i for i, t in enumerate(texts)}
    inventory.concept_vectors = vectors[[position[k] for k in keys]]
    for cid in ids:
        items = inventory.concepts[cid].evidence
        if items:
            inventory.evidence_vectors[cid] = vectors[[position[e.key] for e in items]]

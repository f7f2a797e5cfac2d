"""The memory loop's working state (`LoopMemory`): the live concepts as `ConceptHypothesis` objects, the
retriever's index over them, the evidence each holds (with its mention, time and conversation), who takes
part in each conversation, and the fact concepts of each subject that instances and episodes are matched
against. Loaded once per run from the stores; every decision of the run updates it."""

from __future__ import annotations

import time

import numpy as np
from sqlalchemy import func, select

from memory_core.concepts.store import read_concepts
from memory_core.embeddings.base import Embedder
from memory_core.memory_loop.candidates import Candidate, other_value, stated_facts
from memory_core.memory_loop.patterns import SubjectFacts
from memory_core.memory_loop.report import LoopReport
from memory_core.memory_loop.retriever import ConceptIndex
from memory_core.memory_loop.router import ConceptView
from memory_core.ontology.concepts import LIVE_STATES, ConceptHypothesis
from memory_core.store.db import CorpusStore
from memory_core.store.schema import canonical_concepts, concept_evidence, mentions, messages


class LoopMemory:
    """The loop's working state: the live concepts, the retriever index, what is stored already."""

    def __init__(self, store: CorpusStore, embedder: Embedder, config, report: LoopReport):
        self.store = store
        self.embedder = embedder
        self.config = config
        self.report = report
        self.concepts: dict[str, ConceptHypothesis] = {}
        self.best_evidence: dict[str, float] = {}
        self.held_spans: set[tuple[str, str, int, int]] = set()
        # the concepts the table holds, each with how many evidence spans its row holds (a row is written
        # with only the spans appended since: `update_concepts`)
        self.persisted: dict[str, int] = {}
        # changed concepts whose rows `flush` has not written yet (large rows: see `apply.ROW_DEFER_MIN_SPANS`)
        self.lagging: set[str] = set()
        self.index: ConceptIndex | None = None
        # who takes part in each conversation, and in the conversations each concept is evidenced in
        self.participants: dict[str, frozenset[str]] = {}
        self.people: dict[str, set[str]] = {}
        # concepts whose key changed in this batch (created under a canonical title / usage context, or
        # refined): indexed meanwhile by the candidate's vector, re-embedded together at the batch's end
        self.stale: set[str] = set()
        # per concept its evidence: (mention id, span, time told, conversation); and the fact concepts of
        # each subject that instances and pattern episodes are matched against
        self.evidence_of: dict[str, list[tuple[str, dict, object, str]]] = {}
        self.evidence_mentions: set[tuple[str, str]] = set()
        self.first_evidence: dict[tuple[str, str], tuple[str, dict, object, str]] = {}  # (concept, mention)
        # per concept the revisable facts its evidence states: (subject, slot key) → {(value, polarity)}
        self.fact_values: dict[str, dict[tuple[str, str], set[tuple[str, str]]]] = {}
        self.facts = SubjectFacts()

    def embed(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.embedder.embed(texts)
        self.report.embedding_seconds += time.perf_counter() - started
        return vectors

    def load(self) -> None:
        with self.store.staging.connect() as conn:
            self.concepts = read_concepts(
                conn,
                states=LIVE_STATES,
                order_by=(canonical_concepts.c.first_seen, canonical_concepts.c.concept_id),
            )
            self.persisted = {cid: len(c.evidence_spans) for cid, c in self.concepts.items()}
            ce, m = concept_evidence.c, mentions.c
            evidence = conn.execute(
                select(
                    ce.concept_id, ce.mention_id, ce.message_id, ce.segment_id, ce.span_start, ce.span_end,
                    ce.text, ce.confidence, m.conversation_id, m.message_created_at, m.claims, m.consolidated_id,
                )
                .select_from(concept_evidence.join(mentions, mentions.c.mention_id == ce.mention_id))
                .where(ce.status == "active")
                .order_by(m.message_created_at, ce.mention_id)
            ).all()  # fmt: skip
        ids = list(self.concepts)
        vectors = self.embed([self.concepts[c].embedding_key for c in ids]) if ids else []
        self.index = ConceptIndex(self.config.weights, capacity=max(1024, 2 * len(ids)))
        for i, cid in enumerate(ids):
            self.index_concept(cid, vectors[i])
        with self.store.source.connect() as conn:
            pairs = conn.execute(
                select(
                    messages.c.conversation_id, func.coalesce(messages.c.author, messages.c.role)
                ).distinct()
            ).all()
        by_conversation: dict[str, set[str]] = {}
        for conversation_id, who in pairs:
            by_conversation.setdefault(conversation_id, set()).add(who)
        self.participants = {c: frozenset(p) for c, p in by_conversation.items()}
        for r in evidence:
            if r.concept_id not in self.index:
                continue
            span = {"source_id": r.segment_id, "message_id": r.message_id, "text": r.text,
                    "confidence": r.confidence, "char_start": r.span_start, "char_end": r.span_end}  # fmt: skip
            self.remember(r.concept_id, r.mention_id, span, r.message_created_at, r.conversation_id)
            if r.consolidated_id == r.concept_id:  # its own mentions' facts, not its instances'
                self.hold_facts(r.concept_id, stated_facts(r.claims))
            self.index.touch(r.concept_id, r.message_created_at, r.segment_id, r.conversation_id)
            self.people.setdefault(r.concept_id, set()).update(self.participants.get(r.conversation_id, ()))
        for concept in self.concepts.values():
            self.facts.add(concept)
        self.report.concepts_before = len(ids)

    def remember(self, cid: str, mention_id: str, span: dict, seen_at, conversation_id: str) -> None:
        """A piece of evidence the concept holds (and which mention and conversation it came from)."""
        self.held_spans.add((cid, span["message_id"], span["char_start"], span["char_end"]))
        self.best_evidence[cid] = max(self.best_evidence.get(cid, 0.0), float(span["confidence"]))
        evidence = (mention_id, span, seen_at, conversation_id)
        self.evidence_of.setdefault(cid, []).append(evidence)
        self.first_evidence.setdefault((cid, mention_id), evidence)
        self.evidence_mentions.add((cid, mention_id))

    def hold_facts(self, cid: str, facts) -> None:
        held = self.fact_values.setdefault(cid, {})
        for key, value in facts:
            held.setdefault(key, set()).add(value)

    def other_value(self, cid: str, cand: Candidate) -> str:
        """Why concept `cid` cannot take `cand` as the same fact or an instance ("" when it can)."""
        return other_value(self.fact_values.get(cid, {}), cand.facts)

    def index_concept(self, cid: str, vector: np.ndarray) -> None:
        c = self.concepts[cid]
        self.index.add(cid, vector, c.type, [c.title, *c.aliases], c.first_seen, c.last_seen)

    def refresh_vectors(self) -> None:
        """Embed the keys of the concepts changed in this batch, in one call (not one call per concept)."""
        if not self.stale:
            return
        ids = sorted(self.stale)
        keys = [self.concepts[c].embedding_key for c in ids]
        for cid, vector in zip(ids, self.embed(keys), strict=True):
            self.index.set_vector(cid, vector)
        self.stale.clear()

    def shares_participants(self, cid: str, conversation_id: str) -> bool:
        """Does the concept's evidence come from conversations with someone of this one? (Unknown: yes.)"""
        mine, theirs = self.participants.get(conversation_id), self.people.get(cid)
        return not mine or not theirs or bool(mine & theirs)

    def view(self, cid: str, cand: Candidate) -> ConceptView:
        return ConceptView(
            self.concepts[cid],
            best_evidence_confidence=self.best_evidence.get(cid, 0.0),
            holds_span=(cid, cand.message_id, cand.span_start, cand.span_end) in self.held_spans,
            shares_participants=self.shares_participants(cid, cand.conversation_id),
            other_value=self.other_value(cid, cand),
        )

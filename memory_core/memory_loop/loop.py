"""The Concept Memory Loop: consolidate a corpus's unconsolidated mentions into canonical concepts.

Mentions are processed in chronological order (message time, then message, then span), each against the
concepts as they stand after every earlier decision (progressive alignment against the evolving
consensus): retrieve → route → apply. The loop holds the live concepts as `ConceptHypothesis` objects (read
and written through the concept store) and applies each decision's patch to them. Decisions are written per
batch in one staging transaction: the ActionLog rows, the new/changed concepts, `concept_evidence` rows,
the hard link `mentions.consolidated_id` and the residuals. A mention is done once it is linked or has a memory-loop
residual, so a rerun touches only new mentions and a crashed run resumes at the first unwritten batch.

The loop also knows who takes part in each conversation (message authors): a candidate only meets concepts
evidenced in conversations sharing a participant with its own (one corpus may hold several people's
histories). A concept whose key ("{title}: {description}") changes in a batch - created under a canonical
title or with a usage context, or refined - is indexed by the candidate's vector until the batch ends, then
all such keys are embedded in one call.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from sqlalchemy import Text, and_, bindparam, cast, exists, func, insert, select, update

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import apply_patch, concept_from_patch
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.store import (
    CONSOLIDATION_STAGE,
    evidence_row,
    insert_concepts,
    read_concepts,
    update_concepts,
)
from memory_core.embeddings.base import Embedder
from memory_core.ids import stable_uuid
from memory_core.memory_loop.adjudication import Adjudicator
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.patches import create_patch, evidence_patch
from memory_core.memory_loop.report import LoopReport
from memory_core.memory_loop.retriever import ConceptIndex, RetrieverWeights
from memory_core.memory_loop.router import ConceptView, Decision, Router, RouterRules
from memory_core.memory_loop.summaries import usage_context
from memory_core.ontology.concepts import LIVE_STATES, NAME_TYPES, RELATION_TYPES, ConceptHypothesis
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    mentions,
    messages,
    residuals,
    segments,
)

STAGE = CONSOLIDATION_STAGE
ACTOR = "memory_loop"
# adjudications that ended without a usable answer are kept for offline analysis under their own stage (a
# `memory_loop` residual would mark the mention rejected: it was not, the rule decided)
ADJUDICATION_STAGE = "memory_loop_adjudication"
_ADJUDICATION_FAULTS = {"adjudicator_failed": "failed", "adjudicator_invalid": "invalid"}
_IN_CHUNK = 500


@dataclass
class LoopConfig:
    rules: RouterRules = field(default_factory=RouterRules)
    weights: RetrieverWeights = field(default_factory=RetrieverWeights)
    policy: ConceptPolicy = field(default_factory=ConceptPolicy)
    batch_size: int = 256


def _chunks(items: list, size: int = _IN_CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _Memory:
    """The loop's working state: the live concepts, the retriever index, what is stored already."""

    def __init__(self, store: CorpusStore, embedder: Embedder, config: LoopConfig, report: LoopReport):
        self.store = store
        self.embedder = embedder
        self.config = config
        self.report = report
        self.concepts: dict[str, ConceptHypothesis] = {}
        self.best_evidence: dict[str, float] = {}
        self.held_spans: set[tuple[str, str, int, int]] = set()
        self.persisted: set[str] = set()
        self.index: ConceptIndex | None = None
        # who takes part in each conversation, and in the conversations each concept is evidenced in
        self.participants: dict[str, frozenset[str]] = {}
        self.people: dict[str, set[str]] = {}
        # concepts whose key changed in this batch (created under a canonical title / usage context, or
        # refined): indexed meanwhile by the candidate's vector, re-embedded together at the batch's end
        self.stale: set[str] = set()

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
            self.persisted = set(self.concepts)
            for r in conn.execute(
                select(
                    concept_evidence.c.concept_id,
                    concept_evidence.c.message_id,
                    concept_evidence.c.span_start,
                    concept_evidence.c.span_end,
                    concept_evidence.c.confidence,
                )
            ):
                if r.concept_id in self.concepts:
                    self.held_spans.add((r.concept_id, r.message_id, r.span_start, r.span_end))
                    self.best_evidence[r.concept_id] = max(
                        self.best_evidence.get(r.concept_id, 0.0), r.confidence
                    )
            links = conn.execute(
                select(
                    mentions.c.consolidated_id,
                    mentions.c.segment_id,
                    mentions.c.conversation_id,
                    mentions.c.message_created_at,
                ).where(mentions.c.consolidated_id.is_not(None))
            ).all()
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
        for cid, segment_id, conversation_id, seen_at in links:
            if cid in self.index:
                self.index.touch(cid, seen_at, segment_id, conversation_id)
                self.people.setdefault(cid, set()).update(self.participants.get(conversation_id, ()))
        self.report.concepts_before = len(ids)

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
        )


def _pending_ids(store: CorpusStore) -> list[str]:
    done = exists().where(and_(residuals.c.stage == STAGE, residuals.c.mention_id == mentions.c.mention_id))
    with store.staging.connect() as conn:
        return list(
            conn.execute(
                select(mentions.c.mention_id)
                .where(mentions.c.consolidated_id.is_(None), ~done)
                .order_by(
                    mentions.c.message_created_at,
                    mentions.c.message_id,
                    mentions.c.span_start,
                    mentions.c.span_end,
                    mentions.c.mention_id,
                )
            ).scalars()
        )


def _load_batch(store: CorpusStore, ids: list[str]) -> tuple[list[Candidate], dict[str, str], set[str]]:
    with store.staging.connect() as conn:
        rows = {
            r.mention_id: Candidate.from_row(r)
            for r in conn.execute(select(mentions).where(mentions.c.mention_id.in_(ids)))
        }
        seg_ids = list({c.segment_id for c in rows.values()})
        live = set(
            conn.execute(
                select(segments.c.segment_id).where(
                    segments.c.segment_id.in_(seg_ids), segments.c.superseded_at.is_(None)
                )
            ).scalars()
        )
    cands = [rows[i] for i in ids if i in rows]
    with store.source.connect() as conn:
        texts = {
            r.message_id: r.text
            for r in conn.execute(
                select(messages.c.message_id, messages.c.text).where(
                    messages.c.message_id.in_(list({c.message_id for c in cands}))
                )
            )
        }
    return cands, texts, live


@dataclass
class _Batch:
    records: list[log.ActionRecord] = field(default_factory=list)
    new_concepts: list[str] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)
    evidence: list[dict] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)


def _flush(mem: _Memory, batch: _Batch) -> None:
    started = time.perf_counter()
    existing = [c for c in batch.changed if c in mem.persisted]
    with mem.store.staging.begin() as conn:
        update_concepts(conn, [mem.concepts[c] for c in existing])
        insert_concepts(conn, [mem.concepts[c] for c in batch.new_concepts])
        if batch.evidence:
            conn.execute(insert(concept_evidence), batch.evidence)
        if batch.links:
            conn.execute(
                update(mentions)
                .where(mentions.c.mention_id == bindparam("b_mention_id"))
                .values(consolidated_id=bindparam("b_concept_id")),
                batch.links,
            )
        if batch.residuals:
            conn.execute(insert(residuals), batch.residuals)
        log.append(conn, batch.records)
    mem.persisted.update(batch.new_concepts)
    mem.report.write_seconds += time.perf_counter() - started
    mem.report.batches += 1


def _decision_record(
    run_id: str, cand: Candidate, cid: str | None, d: Decision, prior, new, now
) -> log.ActionRecord:
    return log.ActionRecord(
        action=d.action,
        actor=ACTOR,
        concept_id=cid,
        mention_id=cand.mention_id,
        scores={**d.scores, "reason_code": d.reason_code},
        rationale=d.rationale,
        cited_message_ids=[cand.message_id],
        prior_state=prior,
        new_state=new,
        run_id=run_id,
        recorded_at=now,
    )


def _residual(stage: str, cand: Candidate, d: Decision, now) -> dict:
    payload = {
        "title": cand.title,
        "type": cand.type,
        "description": cand.description,
        "confidence": cand.confidence,
    }
    return dict(
        stage=stage,
        segment_id=cand.segment_id,
        message_id=cand.message_id,
        mention_id=cand.mention_id,
        reason_code=d.reason_code,
        reason=d.rationale,
        payload={**payload, "scores": d.scores},
        recorded_at=now,
    )


def _reject(mem: _Memory, batch: _Batch, run_id: str, cand: Candidate, d: Decision, now) -> None:
    mem.report.actions["reject"] += 1
    mem.report.reject_reasons[d.reason_code] += 1
    batch.residuals.append(_residual(STAGE, cand, d, now))
    batch.records.append(_decision_record(run_id, cand, None, d, None, None, now))


def _count_adjudication(mem: _Memory, batch: _Batch, cand: Candidate, d: Decision, now) -> None:
    answer = d.scores.get("adjudicator")
    if answer is None:
        return
    fault = _ADJUDICATION_FAULTS.get(d.reason_code)
    mem.report.adjudications[fault or answer["decision"]] += 1
    if fault:
        batch.residuals.append(_residual(ADJUDICATION_STAGE, cand, d, now))


def _apply(mem: _Memory, batch: _Batch, run_id: str, cand: Candidate, vec: np.ndarray, d: Decision) -> None:
    now = utcnow()
    index = mem.index
    mem.report.reasons[d.reason_code] += 1
    _count_adjudication(mem, batch, cand, d, now)
    if d.action == "reject":
        _reject(mem, batch, run_id, cand, d, now)
        return
    if d.action == "create":
        cid = stable_uuid("concept", mem.store.name, cand.mention_id)
        patch = create_patch(cid, cand, mem.config.policy, now)
        concept, spans = concept_from_patch(patch)
        mem.concepts[cid] = concept
        if concept.embedding_key != cand.embedding_key:
            mem.stale.add(cid)  # a canonical title or a usage context: its own key, embedded with the batch
        mem.index_concept(cid, vec)
        batch.new_concepts.append(cid)
        batch.records.append(_decision_record(run_id, cand, cid, d, None, patch, now))
    else:
        cid = d.concept_id
        concept = mem.concepts[cid]
        prior, patch = evidence_patch(
            concept,
            cand,
            mem.config.policy,
            now,
            duplicate=d.duplicate_span,
            description=d.description if d.action == "refine" else None,
        )
        spans = apply_patch(concept, patch)
        if "aliases" in patch:
            index.set_names(cid, [concept.title, *concept.aliases])
        if d.action == "refine":
            mem.stale.add(cid)
            mem.report.refined_concepts.add(cid)
        batch.changed.add(cid)
        batch.records.append(_decision_record(run_id, cand, cid, d, prior, patch, now))
    mem.report.actions[d.action] += 1
    index.touch(cid, cand.message_created_at, cand.segment_id, cand.conversation_id)
    mem.people.setdefault(cid, set()).update(mem.participants.get(cand.conversation_id, ()))
    for span in spans:
        mem.held_spans.add((cid, span.message_id, span.char_start, span.char_end))
        mem.best_evidence[cid] = max(mem.best_evidence.get(cid, 0.0), span.confidence)
        batch.evidence.append(evidence_row(cid, cand.mention_id, span))
    batch.links.append({"b_mention_id": cand.mention_id, "b_concept_id": cid})


def _resolve_relations(mem: _Memory, run_id: str) -> None:
    """Typed relations the extractor proposed (by target title), once their targets exist as concepts."""
    index = mem.index
    added: dict[str, dict[tuple[str, str], float]] = {}
    cited: dict[str, list[str]] = {}
    with mem.store.staging.connect() as conn:
        rows = conn.execute(
            select(mentions.c.consolidated_id, mentions.c.message_id, mentions.c.relations).where(
                mentions.c.consolidated_id.is_not(None), cast(mentions.c.relations, Text) != "[]"
            )
        ).all()
    for cid, message_id, relations in rows:
        if cid not in mem.concepts:
            continue
        current = {(r.target_id, r.relation): r.confidence for r in mem.concepts[cid].relations}
        for rel in relations or []:
            if rel.get("relation") not in RELATION_TYPES:
                continue
            targets = sorted(
                index.concepts_named(rel.get("target_title", "")) - {cid},
                key=lambda t: (-mem.concepts[t].support_count, t),
            )
            if not targets:
                continue
            key = (targets[0], rel["relation"])
            conf = round(float(rel.get("confidence", 0.0)), 4)
            have = added.get(cid, {}).get(key, current.get(key))
            if have is None or conf > have:
                added.setdefault(cid, {})[key] = conf
                cited.setdefault(cid, []).append(message_id)
    if not added:
        return
    batch = _Batch()
    now = utcnow()
    for cid in sorted(added):
        concept = mem.concepts[cid]
        merged = {(r.target_id, r.relation): r.confidence for r in concept.relations}
        merged.update(added[cid])
        relations = [
            {"target_id": t, "relation": rel, "confidence": c} for (t, rel), c in sorted(merged.items())
        ]
        prior = {"relations": [r.model_dump() for r in concept.relations], "recorded_at": concept.recorded_at}
        patch = {"relations": relations, "recorded_at": now}
        apply_patch(concept, patch)
        batch.changed.add(cid)
        mem.report.relations_added += len(added[cid])
        rationale = (
            "typed relations proposed by the extractor, targets resolved by exact title/alias: "
            + ", ".join(f"{rel} → {mem.concepts[t].title}" for (t, rel) in sorted(added[cid]))
        )
        batch.records.append(
            log.ActionRecord(
                action="relate",
                actor=ACTOR,
                concept_id=cid,
                mention_id=None,
                scores={"relations": len(added[cid])},
                rationale=rationale,
                cited_message_ids=sorted(set(cited[cid])),
                prior_state=prior,
                new_state=patch,
                run_id=run_id,
                recorded_at=now,
            )
        )
    mem.report.actions["relate"] += len(batch.records)
    _flush(mem, batch)


def consolidate(
    store: CorpusStore,
    embedder: Embedder,
    config: LoopConfig | None = None,
    run_id: str | None = None,
    adjudicator: Adjudicator | None = None,
    log_fn: Callable[[str], None] | None = None,
) -> LoopReport:
    """Consolidate every mention not yet linked or rejected. The caller holds the corpus write lock."""
    config = config or LoopConfig()
    started = time.perf_counter()
    report = LoopReport(run_id=run_id or uuid.uuid4().hex)
    mem = _Memory(store, embedder, config, report)
    mem.load()
    router = Router(config.rules, adjudicator)
    pending = _pending_ids(store)
    report.pending = len(pending)
    rejected_vectors: list[np.ndarray] = []
    for ids in _chunks(pending, config.batch_size):
        cands, texts, live = _load_batch(store, ids)
        vectors = mem.embed([c.embedding_key for c in cands])
        t0 = time.perf_counter()
        presims = mem.index.batch_similarities(vectors)
        report.retrieval_seconds += time.perf_counter() - t0
        batch = _Batch()
        for cand, vec, row_sims in zip(cands, vectors, presims, strict=True):
            report.processed += 1
            text = texts.get(cand.message_id)
            decision = router.screen(cand, text, cand.segment_id in live)
            if decision is None:
                if cand.type in NAME_TYPES:
                    cand = replace(cand, usage=usage_context(text, cand.span_start, cand.span_end))
                t0 = time.perf_counter()
                hits = mem.index.retrieve(
                    vec,
                    cand.names,
                    cand.message_created_at,
                    cand.segment_id,
                    cand.conversation_id,
                    presims=row_sims,
                )
                views = {h.concept_id: mem.view(h.concept_id, cand) for h in hits}
                decision = router.route(cand, hits, views)
                report.retrieval_seconds += time.perf_counter() - t0
            if decision.action == "reject":
                rejected_vectors.append(vec)
            _apply(mem, batch, report.run_id, cand, vec, decision)
        mem.refresh_vectors()
        _flush(mem, batch)
        if log_fn:
            log_fn(f"{report.processed}/{report.pending} mentions, {len(mem.concepts)} concepts")
    _resolve_relations(mem, report.run_id)
    if rejected_vectors:
        report.residual_novelty = [
            round(1.0 - float(s), 4) for s in mem.index.max_similarity(np.stack(rejected_vectors))
        ]
    report.concepts_after = len(mem.concepts)
    report.seconds = time.perf_counter() - started
    return report

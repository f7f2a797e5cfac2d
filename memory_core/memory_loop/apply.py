"""How the memory loop's decisions are applied and written: a batch of ActionLog records, new and changed
concepts, evidence rows, mention links and residuals (`Batch`, `flush`), one decision at a time (`apply`),
and the evidence a fact lends the broader concept it is an instance or episode of (`support`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import bindparam, insert, update

from memory_core.concepts import action_log as log
from memory_core.concepts.patches import apply_patch, concept_from_patch
from memory_core.concepts.rows_behind import clear_rows_behind, mark_rows_behind
from memory_core.concepts.store import CONSOLIDATION_STAGE, evidence_row, insert_concepts, update_concepts
from memory_core.ids import stable_uuid
from memory_core.memory_loop import summaries
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.memory import LoopMemory
from memory_core.memory_loop.patches import create_patch, evidence_patch, support_patch
from memory_core.memory_loop.patterns import instance_target
from memory_core.memory_loop.router import Decision
from memory_core.ontology.concepts import FACT_TYPES, EvidenceSpan
from memory_core.store.db import utcnow
from memory_core.store.schema import concept_evidence, mentions, residuals

STAGE = CONSOLIDATION_STAGE
ACTOR = "memory_loop"
# adjudications that ended without a usable answer are kept for offline analysis under their own stage (a
# `memory_loop` residual would mark the mention rejected: it was not, the rule decided)
ADJUDICATION_STAGE = "memory_loop_adjudication"
_ADJUDICATION_FAULTS = {"adjudicator_failed": "failed", "adjudicator_invalid": "invalid"}
# reflective candidates left as residuals for want of episodes: judged again when new evidence arrives
HELD_REASONS = ("reflective_unsupported", "reflective_contradicted", "theme_unsupported")
# A concept row holds its whole evidence and SQLite rewrites a whole row on any update, so a popular concept
# touched in every batch cost its evidence's size each batch: the stored spans rewritten per mention grew with
# the corpus (31 at 10k messages, 90 at 30k; 0.84 GB rewritten at 30k). A row holding this many spans is
# written again only once its evidence has doubled since it was last written, and at the run's end
# (`write_lagging`): each row then costs O(its evidence) over a run. Until then it lags the action log and is
# listed in `concept_rows_behind`, from which a dead run's rows are rebuilt (concepts/rows_behind.py).
ROW_DEFER_MIN_SPANS = 64


@dataclass
class Batch:
    dropped_residuals: list[str] = field(default_factory=list)  # held residuals judged again in this run
    records: list[log.ActionRecord] = field(default_factory=list)
    new_concepts: list[str] = field(default_factory=list)
    changed: set[str] = field(default_factory=set)
    evidence: list[dict] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)
    residuals: list[dict] = field(default_factory=list)


def _row_due(mem: LoopMemory, cid: str) -> bool:
    stored = mem.persisted[cid]
    return stored < ROW_DEFER_MIN_SPANS or len(mem.concepts[cid].evidence_spans) >= 2 * stored


def flush(mem: LoopMemory, batch: Batch) -> None:
    started = time.perf_counter()
    changed = sorted(c for c in batch.changed | mem.lagging if c in mem.persisted)
    existing = [c for c in changed if _row_due(mem, c)]
    behind, mem.lagging = mem.lagging, set(changed) - set(existing)
    with mem.store.staging.begin() as conn:
        # which rows lag, in the transaction that logs their changes: a run dying after it leaves them listed
        mark_rows_behind(conn, mem.lagging - behind)
        clear_rows_behind(conn, behind - mem.lagging)
        if batch.dropped_residuals:
            conn.execute(
                residuals.delete().where(
                    residuals.c.stage == STAGE,
                    residuals.c.reason_code.in_(HELD_REASONS),
                    residuals.c.mention_id.in_(batch.dropped_residuals),
                )
            )
        update_concepts(conn, [mem.concepts[c] for c in existing], mem.persisted)
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
    mem.persisted.update((c, len(mem.concepts[c].evidence_spans)) for c in [*existing, *batch.new_concepts])
    mem.report.write_seconds += time.perf_counter() - started
    mem.report.batches += 1


def write_lagging(mem: LoopMemory) -> None:
    """Write the rows `flush` left lagging (the run's end): every row then matches the action log again."""
    if not mem.lagging:
        return
    started = time.perf_counter()
    ids = sorted(mem.lagging)
    with mem.store.staging.begin() as conn:
        update_concepts(conn, [mem.concepts[c] for c in ids], mem.persisted)
        clear_rows_behind(conn, ids)
    mem.persisted.update((c, len(mem.concepts[c].evidence_spans)) for c in ids)
    mem.lagging.clear()
    mem.report.write_seconds += time.perf_counter() - started


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


def _reject(mem: LoopMemory, batch: Batch, run_id: str, cand: Candidate, d: Decision, now) -> None:
    mem.report.actions["reject"] += 1
    mem.report.reject_reasons[d.reason_code] += 1
    batch.residuals.append(_residual(STAGE, cand, d, now))
    batch.records.append(_decision_record(run_id, cand, None, d, None, None, now))


def _count_adjudication(mem: LoopMemory, batch: Batch, cand: Candidate, d: Decision, now) -> None:
    answer = d.scores.get("adjudicator")
    if answer is None:
        return
    fault = _ADJUDICATION_FAULTS.get(d.reason_code)
    mem.report.adjudications[fault or answer["decision"]] += 1
    if fault:
        batch.residuals.append(_residual(ADJUDICATION_STAGE, cand, d, now))


def apply(
    mem: LoopMemory, batch: Batch, run_id: str, cand: Candidate, vec: np.ndarray, d: Decision
) -> str | None:
    """Apply one decision; the concept the candidate now supports (None for a reject)."""
    now = utcnow()
    index = mem.index
    mem.report.reasons[d.reason_code] += 1
    _count_adjudication(mem, batch, cand, d, now)
    if d.action == "reject":
        _reject(mem, batch, run_id, cand, d, now)
        return None
    if d.action == "create":
        cid = stable_uuid("concept", mem.store.name, cand.mention_id)
        patch = create_patch(cid, cand, mem.config.policy, now)
        concept, spans = concept_from_patch(patch)
        mem.concepts[cid] = concept
        if concept.embedding_key != cand.embedding_key:
            mem.stale.add(cid)  # a canonical title or a usage context: its own key, embedded with the batch
        mem.index_concept(cid, vec)
        mem.facts.add(concept)
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
            independent=not index.has_evidence_in(cid, cand.conversation_id),
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
    mem.hold_facts(cid, cand.facts)
    for span in spans:
        mem.remember(cid, cand.mention_id, span.model_dump(), cand.message_created_at, cand.conversation_id)
        batch.evidence.append(evidence_row(cid, cand.mention_id, span))
    batch.links.append({"b_mention_id": cand.mention_id, "b_concept_id": cid})
    return cid


def support(
    mem: LoopMemory,
    batch: Batch,
    run_id: str,
    target: str,
    evidence: tuple[str, dict, object, str],
    instance_title: str,
    reason: str,
    rationale: str,
) -> bool:
    """A fact's evidence made evidence of a broader concept it is an instance or episode of (a mention
    supports one concept as its own and any number as evidence). False when the concept holds it already."""
    mention_id, span, seen_at, conversation_id = evidence
    if (target, mention_id) in mem.evidence_mentions or (
        target,
        span["message_id"],
        span["char_start"],
        span["char_end"],
    ) in mem.held_spans:
        return False
    now = utcnow()
    concept = mem.concepts[target]
    policy = mem.config.policy
    if reason == "instance_of":
        factor = policy.support_factor
    else:  # an episode is the pattern's own evidence, independent when it comes from a new conversation
        factor = (
            1.0
            if not mem.index.has_evidence_in(target, conversation_id)
            else policy.dependent_evidence_factor
        )
    prior, patch = support_patch(
        concept,
        span,
        seen_at,
        policy,
        now,
        summaries.with_instance(concept.description, instance_title),
        factor,
    )
    apply_patch(concept, patch)
    if "description" in patch:
        mem.stale.add(target)
    batch.changed.add(target)
    batch.records.append(
        log.ActionRecord(
            action="attach", actor=ACTOR, concept_id=target, mention_id=mention_id,
            scores={"reason_code": reason}, rationale=rationale, cited_message_ids=[span["message_id"]],
            prior_state=prior, new_state=patch, run_id=run_id, recorded_at=now,
        )
    )  # fmt: skip
    mem.report.actions["attach"] += 1
    mem.report.reasons[reason] += 1
    mem.index.touch(target, seen_at, span["source_id"], conversation_id)
    mem.remember(target, mention_id, span, seen_at, conversation_id)
    batch.evidence.append(evidence_row(target, mention_id, EvidenceSpan.model_validate(span)))
    return True


def support_broader(
    mem: LoopMemory, batch: Batch, run_id: str, cand: Candidate, vec: np.ndarray, own: str
) -> None:
    """A fact that is an instance of a goal or habit of its subject supports it (`patterns.instance_target`)."""
    rules = mem.config.rules
    if cand.type not in FACT_TYPES or cand.type in rules.reflective_types:
        return
    target = instance_target(mem.facts, mem.index, cand, vec, own, rules)
    if target is None:
        return
    cid, cosine = target
    if mem.other_value(cid, cand):  # another value of its fact is no instance of it
        return
    evidence = mem.first_evidence.get((own, cand.mention_id))
    if evidence is not None:
        why = f"an instance of {mem.concepts[cid].title!r}: same subject, a shared content stem, cosine {cosine:.3f}"
        support(mem, batch, run_id, cid, evidence, cand.canonical_title, "instance_of", why)

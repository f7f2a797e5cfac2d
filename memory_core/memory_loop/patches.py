"""The patches the memory loop's decisions turn into (see `memory_core.concepts.patches` for the format).

Every decision becomes a patch: the changed fields of the `ConceptHypothesis` with their new values, plus
`evidence_append` (the candidate's span). The loop applies it to the concept it holds and writes it to the
ActionLog, whose replay applies the same patch with the same `apply_patch`.
"""

from __future__ import annotations

from datetime import datetime

from memory_core.concepts.names import merge_aliases
from memory_core.concepts.patches import EVIDENCE_APPEND
from memory_core.concepts.policy import ConceptPolicy, noisy_or, state_for
from memory_core.memory_loop import summaries
from memory_core.memory_loop.candidates import Candidate
from memory_core.ontology.concepts import NAME_TYPES, ConceptHypothesis


def create_patch(concept_id: str, cand: Candidate, policy: ConceptPolicy, now: datetime) -> dict:
    """A new concept from a candidate: the canonical title (a fact's short form), the candidate's
    description (a name's with its usage context, see `summaries.py`)."""
    confidence = noisy_or(0.0, cand.confidence, policy.evidence_weight)
    title = cand.canonical_title
    description = cand.description.strip()
    if cand.type in NAME_TYPES and cand.usage:
        description = summaries.compose(description, [cand.usage])
    return {
        "concept_id": concept_id,
        "title": title,
        "type": cand.type,
        "description": description,
        "state": state_for(confidence, policy.active_confidence),
        "trust": "stable",
        "confidence": confidence,
        "aliases": merge_aliases(title, [], [cand.title, *cand.aliases]),
        "relations": [],
        "revision_count": 0,
        "support_count": 1,
        "first_seen": cand.message_created_at,
        "last_seen": cand.message_created_at,
        "recorded_at": now,
        "merged_into": None,
        EVIDENCE_APPEND: [cand.evidence_span()],
    }


def _changed(concept: ConceptHypothesis, updates: dict) -> tuple[dict, dict]:
    prior = {k: getattr(concept, k) for k, v in updates.items() if getattr(concept, k) != v}
    new = {k: v for k, v in updates.items() if k in prior}
    return prior, new


def evidence_patch(
    concept: ConceptHypothesis,
    cand: Candidate,
    policy: ConceptPolicy,
    now: datetime,
    duplicate: bool,
    description: str | None = None,
    independent: bool = True,
) -> tuple[dict, dict]:
    """(prior_state, new_state) of an attach (description None) or refine (the new description) of `cand`.

    Attach adds the span (unless the concept already holds it), raises confidence (by less when the
    candidate is not independent support: a conversation the concept has evidence in already), widens the
    time bounds and learns the candidate's names as aliases. Refine does the same and rewrites the description (the
    router composed it: a better restatement, a name's better definition or a new usage context), with
    revision_count + 1.
    """
    weight = policy.evidence_weight * (1.0 if independent else policy.dependent_evidence_factor)
    confidence = concept.confidence if duplicate else noisy_or(concept.confidence, cand.confidence, weight)
    updates = {
        "confidence": confidence,
        "state": state_for(confidence, policy.active_confidence) if concept.live else concept.state,
        "aliases": merge_aliases(concept.title, concept.aliases, [cand.title, *cand.aliases]),
        "support_count": concept.support_count + (0 if duplicate else 1),
        "first_seen": min(concept.first_seen, cand.message_created_at),
        "last_seen": max(concept.last_seen, cand.message_created_at),
    }
    if description is not None:
        updates["description"] = description
        updates["revision_count"] = concept.revision_count + 1
    prior, new = _changed(concept, updates)
    new["recorded_at"] = now
    prior["recorded_at"] = concept.recorded_at
    new[EVIDENCE_APPEND] = [] if duplicate else [cand.evidence_span()]
    return prior, new


def support_patch(
    concept: ConceptHypothesis,
    span: dict,
    seen_at: datetime,
    policy: ConceptPolicy,
    now: datetime,
    description: str | None = None,
    factor: float = 1.0,
) -> tuple[dict, dict]:
    """(prior_state, new_state) of a fact supporting a broader concept it is an instance or episode of
    ("Caroline applied to adoption agencies" → "Caroline wants to adopt"): the fact's evidence span becomes
    the concept's evidence too, confidence rises by a `factor` share of a piece of evidence (an instance of
    a goal: `support_factor`; an episode of a pattern is its evidence: 1, or `dependent_evidence_factor` in a
    conversation it has evidence in already), the time bounds widen, and the description may grow (the
    instances it lists: `summaries.with_instance`)."""
    weight = policy.evidence_weight * factor
    confidence = noisy_or(concept.confidence, float(span["confidence"]), weight)
    updates = {
        "confidence": confidence,
        "state": state_for(confidence, policy.active_confidence) if concept.live else concept.state,
        "support_count": concept.support_count + 1,
        "first_seen": min(concept.first_seen, seen_at),
        "last_seen": max(concept.last_seen, seen_at),
    }
    if description is not None and description != concept.description:
        updates["description"] = description
        updates["revision_count"] = concept.revision_count + 1
    prior, new = _changed(concept, updates)
    new["recorded_at"] = now
    prior["recorded_at"] = concept.recorded_at
    new[EVIDENCE_APPEND] = [span]
    return prior, new


def theme_patch(
    concept_id: str, title: str, description: str, first_seen: datetime, policy: ConceptPolicy, now: datetime
) -> dict:
    """A pattern read off a person's facts (`patterns.Theme`): created without evidence of its own, its
    episodes then support it one by one (`support_patch`), so its confidence is theirs."""
    return {
        "concept_id": concept_id,
        "title": title,
        "type": "behavioral_pattern",
        "description": description,
        "state": state_for(0.0, policy.active_confidence),
        "trust": "stable",
        "confidence": 0.0,
        "aliases": [],
        "relations": [],
        "revision_count": 0,
        "support_count": 0,
        "first_seen": first_seen,
        "last_seen": first_seen,
        "recorded_at": now,
        "merged_into": None,
        EVIDENCE_APPEND: [],
    }

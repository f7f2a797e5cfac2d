"""Concept state as the loop holds it, and the patches every decision turns into.

A concept's *head* is its `canonical_concepts` row without `evidence_spans` (that list only grows, so it
is appended to the stored row when a batch is written instead of being held in memory). Every decision
becomes a patch: the changed fields with their new values, plus `evidence_append` (spans to add). The live
loop and the ActionLog replay apply patches with the same `apply_patch`, which is why replaying the log
reproduces the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory_core.memory_loop import summaries
from memory_core.memory_loop.candidates import Candidate, normalise_name
from memory_core.ontology.concepts import NAME_TYPES

DATETIME_FIELDS = ("first_seen", "last_seen", "recorded_at")
EVIDENCE_APPEND = "evidence_append"
# A gardener patch that moves evidence between concepts states the concept's whole `concept_evidence` rows
# (set semantics, without concept_id) next to its whole `evidence_spans`: replay replaces instead of appending.
EVIDENCE_ROWS = "evidence_rows"


def noisy_or(confidence: float, evidence_confidence: float, weight: float) -> float:
    """Concept confidence after one more piece of evidence: independent support, each discounted by `weight`."""
    return round(1.0 - (1.0 - confidence) * (1.0 - weight * evidence_confidence), 4)


def merge_aliases(title: str, aliases: list[str], new: list[str]) -> list[str]:
    """Aliases plus `new` names, keeping first spellings, never repeating the title (compared normalised)."""
    seen = {normalise_name(title)} | {normalise_name(a) for a in aliases}
    out = list(aliases)
    for name in new:
        norm = normalise_name(name)
        if norm and norm not in seen:
            seen.add(norm)
            out.append(name.strip())
    return out


def state_for(confidence: float, active_confidence: float) -> str:
    return "active" if confidence >= active_confidence else "weak"


def to_json_state(patch: dict | None) -> dict | None:
    """A patch as stored in the ActionLog (times as ISO strings)."""
    if patch is None:
        return None
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in patch.items()}


def from_json_state(state: dict | None) -> dict | None:
    if state is None:
        return None
    return {
        k: (datetime.fromisoformat(v) if k in DATETIME_FIELDS and isinstance(v, str) else v)
        for k, v in state.items()
    }


def apply_patch(head: dict, patch: dict) -> list[dict]:
    """Apply a patch to a concept head in place; returns the evidence spans it appends."""
    for key, value in patch.items():
        if key not in (EVIDENCE_APPEND, EVIDENCE_ROWS):
            head[key] = value
    return list(patch.get(EVIDENCE_APPEND, ()))


@dataclass
class ConceptPolicy:
    """How evidence moves a concept's confidence and state."""

    evidence_weight: float = 0.6
    active_confidence: float = 0.5


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


def _changed(head: dict, updates: dict) -> tuple[dict, dict]:
    prior = {k: head.get(k) for k, v in updates.items() if k != EVIDENCE_APPEND and head.get(k) != v}
    new = {k: v for k, v in updates.items() if k == EVIDENCE_APPEND or k in prior}
    return prior, new


def evidence_patch(
    head: dict,
    cand: Candidate,
    policy: ConceptPolicy,
    now: datetime,
    duplicate: bool,
    description: str | None = None,
) -> tuple[dict, dict]:
    """(prior_state, new_state) of an attach (description None) or refine (the new description) of `cand`.

    Attach adds the span (unless the concept already holds it), raises confidence, widens the time bounds
    and learns the candidate's names as aliases. Refine does the same and rewrites the description (the
    router composed it: a better restatement, a name's better definition or a new usage context), with
    revision_count + 1.
    """
    confidence = (
        head["confidence"]
        if duplicate
        else noisy_or(head["confidence"], cand.confidence, policy.evidence_weight)
    )
    updates = {
        "confidence": confidence,
        "state": state_for(confidence, policy.active_confidence)
        if head["state"] in ("active", "weak")
        else head["state"],
        "aliases": merge_aliases(head["title"], head["aliases"], [cand.title, *cand.aliases]),
        "support_count": head["support_count"] + (0 if duplicate else 1),
        "first_seen": min(head["first_seen"], cand.message_created_at),
        "last_seen": max(head["last_seen"], cand.message_created_at),
    }
    if description is not None:
        updates["description"] = description
        updates["revision_count"] = head["revision_count"] + 1
    prior, new = _changed(head, updates)
    new["recorded_at"] = now
    prior["recorded_at"] = head["recorded_at"]
    new[EVIDENCE_APPEND] = [] if duplicate else [cand.evidence_span()]
    return prior, new

"""How evidence moves a concept's confidence and state: one rule for the memory loop's decisions and the
gardener's merges and splits."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ConceptPolicy:
    evidence_weight: float = 0.6  # noisy-OR discount of one piece of evidence
    active_confidence: float = 0.5  # concepts below are weak
    # confidence rises with *independent* support: a restatement in a conversation the concept already has
    # evidence in, or an instance supporting a broader concept, counts for this share of a new piece
    dependent_evidence_factor: float = 0.5
    support_factor: float = 0.5


def noisy_or(confidence: float, evidence_confidence: float, weight: float) -> float:
    """Concept confidence after one more piece of evidence: independent support, each discounted by `weight`."""
    return round(1.0 - (1.0 - confidence) * (1.0 - weight * evidence_confidence), 4)


def state_for(confidence: float, active_confidence: float) -> str:
    return "active" if confidence >= active_confidence else "weak"

"""Patches: how a change to a concept is written in the ActionLog and applied, live and on replay.

A patch is a dict of changed `ConceptHypothesis` fields with their new values (times as datetimes in memory,
ISO strings in the log), plus at most one of
- `evidence_append`: evidence spans to add to `evidence_spans` (a memory-loop decision);
- `evidence_rows`: the concept's whole `concept_evidence` rows (set semantics, without concept_id), stated
  next to its whole `evidence_spans` by a gardener action that moves evidence between concepts: replay
  replaces the concept's evidence rows instead of appending to them.

The live memory loop and the replay apply patches with the same `apply_patch`, which is why replaying the
log reproduces the table.
"""

from __future__ import annotations

from datetime import datetime

from memory_core.ontology.concepts import ConceptHypothesis, EvidenceSpan

DATETIME_FIELDS = ("first_seen", "last_seen", "recorded_at")
EVIDENCE_APPEND = "evidence_append"
EVIDENCE_ROWS = "evidence_rows"
_NOT_FIELDS = (EVIDENCE_APPEND, EVIDENCE_ROWS)


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


def apply_patch(concept: ConceptHypothesis, patch: dict) -> list[EvidenceSpan]:
    """Apply a patch to a concept in place (assignments are validated); returns the spans it appended."""
    for key, value in patch.items():
        if key not in _NOT_FIELDS:
            setattr(concept, key, value)
    spans = [EvidenceSpan.model_validate(s) for s in patch.get(EVIDENCE_APPEND, ())]
    concept.evidence_spans.extend(spans)
    return spans


def concept_from_patch(patch: dict) -> tuple[ConceptHypothesis, list[EvidenceSpan]]:
    """The concept a creating patch states (a memory-loop create, a gardener split's new concept), and the
    spans the patch appended to it."""
    fields = {k: v for k, v in patch.items() if k not in _NOT_FIELDS}
    concept = ConceptHypothesis.model_validate({"evidence_spans": [], **fields})
    spans = [EvidenceSpan.model_validate(s) for s in patch.get(EVIDENCE_APPEND, ())]
    concept.evidence_spans.extend(spans)
    return concept, spans

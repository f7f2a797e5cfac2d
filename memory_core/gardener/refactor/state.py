"""Concept state as the gardener reads, changes, audits and restores it: the shared snapshots
(`memory_core.concepts.snapshots`), logged with the gardener as actor."""

from __future__ import annotations

from memory_core.concepts import snapshots
from memory_core.concepts.snapshots import (
    Workspace,
    changed_concepts,
    current_snapshot,
    normalise_snapshot,
    write_state,
)

ACTOR = "gardener"


def log_records(*args, **kwargs):
    """`snapshots.log_records` with the gardener as actor."""
    return snapshots.log_records(*args, actor=ACTOR, **kwargs)


__all__ = [
    "ACTOR",
    "Workspace",
    "changed_concepts",
    "current_snapshot",
    "log_records",
    "normalise_snapshot",
    "write_state",
]

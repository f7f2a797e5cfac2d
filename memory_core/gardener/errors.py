"""Errors of the gardener a user can act on (each names the thing and the problem)."""

from __future__ import annotations

from memory_core.errors import MemoryOSError


class GardenerError(MemoryOSError):
    """A gardener request that cannot be carried out (unknown proposal or action, a broken invariant)."""


class RefusedActionError(GardenerError):
    """A Phase 1 action outside the rules: no cited source ids, ids not among the evidence, unknown concepts,
    an evidence split that does not partition the concept's evidence, an untyped relation."""


class RollbackConflictError(GardenerError):
    """The concepts an action touched changed after it (a later action or a memory-loop run): rolling it back
    would lose those changes, so the later changes must be rolled back first."""

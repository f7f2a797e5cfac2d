"""Reports of the revision stages (plain figures; the assets render them)."""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.reports import Figures
from memory_core.revision.claims import ClaimsReport
from memory_core.revision.invalidation import InvalidationReport


@dataclass
class SourceRevisionReport:
    """The `claims` asset: invalidation of changed sources, then the claims."""

    claims: ClaimsReport
    invalidation: InvalidationReport

    def as_metadata(self) -> Figures:
        return {**self.claims.as_metadata(), **self.invalidation.as_metadata()}

    def summary(self) -> str:
        return (
            f"{self.claims.claims} claims ({self.claims.new} new) {dict(self.claims.by_status)}; "
            f"{self.invalidation.concepts_invalidated} concepts invalidated, "
            f"{self.invalidation.repairs_enqueued} repairs queued"
        )

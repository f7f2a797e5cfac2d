"""What a stage hands to whoever runs it: a report of the run and the results of its contracts.

Both speak plain JSON-able values (numbers, strings, booleans, None, lists and dicts of them) under stable
keys: the orchestrator shows them as materialisation and check metadata (its own rendering: Markdown
tables, JSON panels, paths), and the CLI, the benchmarks and the UI's plots key on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

Figures = dict[str, object]


class StageReport(Protocol):
    """A stage run's report (e.g. `IngestReport`, `ExtractionReport`, `TopicsReport`)."""

    def as_metadata(self) -> Figures: ...


@dataclass(frozen=True)
class CheckResult:
    """A stage contract evaluated on what is stored: whether it holds, and the figures it was judged on."""

    passed: bool
    figures: Figures = field(default_factory=dict)

    def as_metadata(self) -> Figures:
        return dict(self.figures)


def share(part: int, whole: int, digits: int = 4, empty: float = 0.0) -> float:
    """`part / whole` rounded, or `empty` when there is no whole."""
    return round(part / whole, digits) if whole else empty

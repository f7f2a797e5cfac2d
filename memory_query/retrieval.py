"""`rank`: one question through the registry's retrieval paths (`memory_query.paths`), phase by phase, each
phase's scores fused (`memory_query.fusion`) before the next phase reads them, then assembled into cited
evidence (`memory_query.assembly`).

A part of memory that is missing (no graph, no vector index, no concepts) contributes nothing and the rest
still answers from the source; the lexical paths are rebuilt from SQLite when their index files are absent.
"""

from __future__ import annotations

import time
from datetime import datetime

from memory_query.assembly import assemble
from memory_query.evidence import MemoryAnswer
from memory_query.fusion import Fusion, strongest
from memory_query.paths import Phase
from memory_query.reader import CorpusReader
from memory_query.settings import RetrievalSettings
from memory_query.state import QueryState, visible_messages


class Laps:
    """Milliseconds per named step of one query (repeated steps add up), and the total."""

    def __init__(self) -> None:
        self.start = self.last = time.perf_counter()
        self.ms: dict[str, float] = {}

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.ms[name] = self.ms.get(name, 0.0) + (now - self.last) * 1000
        self.last = now

    def timings(self) -> dict[str, float]:
        out = {name: round(ms, 2) for name, ms in self.ms.items()}
        out["total"] = round((time.perf_counter() - self.start) * 1000, 2)
        return out


def run_paths(state: QueryState, laps: Laps) -> None:
    """Every path that runs, phase by phase: a phase's paths score, then fusion adds them, in registry
    order, and the next phase reads the result (`state.fused`)."""
    settings = state.settings
    fusion = Fusion(state.visible)
    for phase in Phase:
        paths = settings.paths(phase)
        for path in paths:
            state.scores[path.name] = path.normalise(path.score(state))
            laps.lap(path.name)
        for path in paths:
            fusion.add(settings.weight(path.name), state.scores[path.name])
        state.fused = fusion.scores()
        laps.lap("fusion")


def rank(
    reader: CorpusReader,
    question: str,
    k: int,
    *,
    as_of: datetime | None = None,
    roles: tuple[str, ...] | None = None,
    psychological_access: bool = False,
    settings: RetrievalSettings | None = None,
    believed_at: datetime | None = None,
    since: datetime | None = None,
) -> MemoryAnswer:
    """The k best evidence messages of `reader`'s corpus for `question`, as memory stood at `as_of` (valid
    time: messages after it do not exist, facts are those true then), with facts as memory believed them at
    `believed_at` (system time), of the given `roles` only, written at `since` or later when given; no
    scoping (`memory_query.scoping`'s layer)."""
    laps = Laps()
    settings = settings or RetrievalSettings()
    visible = visible_messages(reader.messages(), as_of, roles, since)
    state = QueryState(reader, question, settings, visible, as_of=as_of, believed_at=believed_at)
    run_paths(state, laps)
    answer = assemble(state, strongest(state.fused, k), as_of, psychological_access)
    laps.lap("assemble")
    answer.timings_ms = laps.timings()
    return answer

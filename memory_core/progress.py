"""Progress inside a long stage: "N/total units, rate, estimate" lines, at most one every few seconds.

The sink is a plain callback, set for the current call by whoever runs the stage (the Dagster asset passes
its logger: `with progress_to(context.log.info): ...`), so the loops deep inside a stage (segments embedded,
trials run, mentions routed) report without a logger threaded through every function, and without Dagster.
Without a sink, `Progress` does nothing.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

#: every progress line starts with this, so a follower of the run's log (the CLI) can tell them apart
PREFIX = "progress "
DEFAULT_EVERY_S = 5.0

_sink: ContextVar[Callable[[str], None] | None] = ContextVar("memory_os_progress_sink", default=None)


@contextlib.contextmanager
def progress_to(log: Callable[[str], None] | None) -> Iterator[None]:
    """Send the progress lines of everything run inside the block to `log`."""
    token = _sink.set(log)
    try:
        yield
    finally:
        _sink.reset(token)


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """Counts `unit`s of `stage` towards `total` and says so every `every_s` seconds (and once at the end
    when a line was said before), with the rate so far and the time left at that rate."""

    def __init__(
        self,
        stage: str,
        unit: str,
        total: int | None,
        every_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.stage, self.unit, self.total = stage, unit, total
        self.every_s = DEFAULT_EVERY_S if every_s is None else every_s
        self.clock = clock
        self.log = _sink.get()
        self.done = 0
        self.started = self.last = clock()
        self.said = 0

    def step(self, n: int = 1) -> None:
        self.done += n
        if self.log is not None and self.clock() - self.last >= self.every_s:
            self._say()

    def finish(self) -> None:
        if self.log is not None and self.said:
            self._say()

    def line(self) -> str:
        took = max(self.clock() - self.started, 1e-9)
        rate = self.done / took
        of = f"/{self.total}" if self.total is not None else ""
        text = f"{PREFIX}{self.stage}: {self.done}{of} {self.unit} ({rate:.1f}/s"
        if self.total is not None and rate > 0 and self.done < self.total:
            text += f", ~{_duration((self.total - self.done) / rate)} left"
        return text + ")"

    def _say(self) -> None:
        self.last = self.clock()
        self.said += 1
        assert self.log is not None
        self.log(self.line())

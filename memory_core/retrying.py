"""Calling again after a short wait while a shared file or catalogue says another process is in the way:
the run processes of a home open its registry, caches and stores together, and some of the races they lose
are answered at once rather than waited out (SQLite in WAL mode, Postgres's catalogue)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def again_while(
    call: Callable[[], T],
    errors: tuple[type[BaseException], ...],
    messages: tuple[str, ...],
    attempts: int = 10,
) -> T:
    """`call()`, again (waiting 50 ms more each time) while it raises one of `errors` whose text contains
    one of `messages`; any other error, or the last attempt's, is raised."""
    for attempt in range(attempts):
        try:
            return call()
        except errors as err:
            if not any(m in str(err) for m in messages) or attempt == attempts - 1:
                raise
            time.sleep(0.05 * (attempt + 1))
    raise ValueError("attempts must be at least 1")

"""Small helpers every benchmark uses: repeated timing with medians, peak RSS, a result table."""

from __future__ import annotations

import resource
import statistics
import time
from collections.abc import Callable


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, list[float], object]:
    """Median wall seconds over `repeat` runs, all runs, and the last result."""
    median, runs, _, result = timed_cpu(fn, repeat)
    return median, runs, result


def timed_cpu(fn: Callable[[], object], repeat: int) -> tuple[float, list[float], float, object]:
    """Median wall seconds, all wall runs, median CPU seconds of this process, and the last result.

    CPU time is reported beside wall time because a shared 2-core machine makes wall time noisy.
    """
    runs, cpus, result = [], [], None
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        result = fn()
        runs.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
    return statistics.median(runs), runs, statistics.median(cpus), result


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def print_table(rows: list[dict]) -> None:
    cols = list(rows[0])
    widths = [max(len(str(c)), *(len(str(r[c])) for r in rows)) for c in cols]
    print("  ".join(str(c).ljust(w) for c, w in zip(cols, widths, strict=True)))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in zip(cols, widths, strict=True)))

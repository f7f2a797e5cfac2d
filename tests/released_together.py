"""Spawned processes released at one moment by a barrier (races between run processes opening the same
store or home), each putting one result on a queue; joined with deadlines, never left running."""

from __future__ import annotations

import multiprocessing


def released_together(target, args: tuple, processes: int) -> list:
    """Each process calls `target(*args, barrier, results)`; the results, in the order they came."""
    # plain processes, each joined with a deadline: a Pool's exit once waited 600 s on a worker (CI, load)
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(processes), context.Queue()
    workers = [context.Process(target=target, args=(*args, barrier, results)) for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        out = [results.get(timeout=180) for _ in workers]
    finally:
        for worker in workers:
            worker.join(timeout=30)
            if worker.is_alive():
                worker.kill()
                worker.join()
    assert [w.exitcode for w in workers] == [0] * processes, out
    return out

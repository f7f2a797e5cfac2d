"""numpy's BLAS (and FAISS's OpenMP) on fewer threads inside a block, for code that runs many small products.

OpenBLAS spreads each product over every core, and on a shared machine its threads spin waiting for busy
cores. The memory loop multiplies one candidate (or a batch of 256) by the concept matrix tens of thousands
of times per run, and the consolidation report's purity does thousands of evidence × reference products:
measured at load 11 on the 2-core machine, a 2,677 × 384 matrix-vector product took 9.4 ms on the default
threads vs 0.64 ms on one, a purity-shaped 30 × 384 @ 384 × 2,000 57 vs 6.2 ms, the batch's 256 × 2,677 102
vs 60 ms — most of the 30k bench corpus's consolidation growth (the held reflective candidates' products went
from 0.9 s at 10k to 208 s at 30k). The numpy query embedder runs a question's few tokens the same way (18 vs
0.5 ms a layer on 2 busy cores). The arithmetic is the same on fewer threads. The limit is process-wide while
the block runs (threadpoolctl sets the library's thread count).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


def _controller():
    """threadpoolctl's controller of the libraries loaded now (None without threadpoolctl). Made per call,
    not cached: a BLAS loaded later (torch's) would escape a controller made before it; making one costs
    ~0.3 ms."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def blas_threads(threads: int) -> contextlib.AbstractContextManager:
    """numpy's BLAS limited to `threads` inside the block (a no-op without threadpoolctl)."""
    controller = _controller()
    return controller.limit(limits=threads, user_api="blas") if controller else contextlib.nullcontext()


def single_threaded_blas() -> contextlib.AbstractContextManager:
    return blas_threads(1)


@contextlib.contextmanager
def faiss_threads(n: int) -> Iterator[None]:
    """FAISS parallelises one query over OpenMP threads; on a small shared machine the spin-up costs more
    than it saves (measured: flat 10k, 1 query: 0.6 ms on 1 thread vs ~30 ms on 2 busy cores)."""
    import faiss

    before = faiss.omp_get_max_threads()
    faiss.omp_set_num_threads(n)
    try:
        yield
    finally:
        faiss.omp_set_num_threads(before)

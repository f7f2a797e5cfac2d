"""numpy's BLAS on one thread for the memory loop's many small products.

The loop multiplies one candidate (or a batch of 256) by the concept matrix tens of thousands of times per
run, and the consolidation report's purity does a few thousand evidence × reference products. OpenBLAS
spreads each over every core, and on a shared machine its threads spin waiting for busy cores: measured at
load 11 on the 2-core machine, a 2,677 × 384 matrix-vector product took 9.4 ms on the default threads vs
0.64 ms on one, a purity-shaped 30 × 384 @ 384 × 2,000 57 ms vs 6.2 ms, the batch's 256 × 2,677 102 ms vs 60 ms.
That, not the algorithm, was most of the 30k bench corpus's consolidation growth (the held reflective
candidates' products went from 0.9 s at 10k to 208 s at 30k). Products are the same arithmetic on one
thread (each output element is computed by one thread either way).
"""

from __future__ import annotations

import contextlib


def single_threaded_blas() -> contextlib.AbstractContextManager:
    """numpy's BLAS limited to one thread inside the block (a no-op without threadpoolctl)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")

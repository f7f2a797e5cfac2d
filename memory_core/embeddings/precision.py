"""The arithmetic of the local model's dense layers: `float32` (sentence-transformers' own vectors) or
`bfloat16` (the dense layers' products on bfloat16 inputs, accumulated in float32 and rounded to bfloat16;
`bert_torch` says which parts stay float32).

Measured on the 2-core machine (AMD EPYC with AVX512-BF16), 400 LongMemEval turns, one thread: a pass of
the model in float32 19.6-22.3 s, in bfloat16 10.8-13.0 s; the two sets of vectors agree to a cosine of
≥ 0.99994 (mean 0.999986). A CPU without native bfloat16 arithmetic emulates it, slower than float32, so
`auto` takes bfloat16 only where the CPU reports it (Linux's `avx512_bf16` or `amx_bf16` flag).

The embedding cache keeps the two apart (`precision_key`): a vector is served only to the arithmetic that
computed it. The model's identity (`model_name`: index metadata, the topic stage's input) is the same in
both, as it is across thread counts and batch sizes, which move vectors too (by ~1e-7): a topics build or a
vector index made in one arithmetic is reused by the other, and an index grown across a change holds
vectors of both.
"""

from __future__ import annotations

import functools
from pathlib import Path

from memory_core.settings import MEMORY_OS_EMBED_PRECISION

FLOAT32 = "float32"
BFLOAT16 = "bfloat16"
AUTO = "auto"
PRECISIONS = (FLOAT32, BFLOAT16, AUTO)
_NATIVE_FLAGS = {"avx512_bf16", "amx_bf16"}


def resolve_precision(requested: str | None = None) -> str:
    """`float32` or `bfloat16`: `requested`, else the `MEMORY_OS_EMBED_PRECISION` setting; `auto` (the
    default) is bfloat16 where the CPU computes it natively."""
    from memory_core.embeddings.factory import EmbedderConfigError

    value = (requested or MEMORY_OS_EMBED_PRECISION.get() or AUTO).strip().lower()
    if value not in PRECISIONS:
        raise EmbedderConfigError(
            f"embedding precision {value!r} is not one of {', '.join(PRECISIONS)} "
            f"(the embeddings resource's `precision` or {MEMORY_OS_EMBED_PRECISION.name})"
        )
    if value == AUTO:
        return BFLOAT16 if native_bfloat16() else FLOAT32
    return value


@functools.lru_cache(maxsize=1)
def native_bfloat16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU computes bfloat16 products natively (read without importing torch: a build whose
    vectors are all cached never loads it)."""
    try:
        with cpuinfo.open() as fp:
            for line in fp:
                if line.startswith("flags"):
                    return bool(_NATIVE_FLAGS & set(line.split(":", 1)[1].split()))
    except OSError:
        return False
    return False


def precision_key(model_name: str, precision: str) -> str:
    """The name a model's vectors are cached under in `precision`: float32's is the model's own name."""
    return model_name if precision == FLOAT32 else f"{model_name}@{precision}"

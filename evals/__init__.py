"""Evaluation harness (LongMemEval / LoCoMo retrieval and QA, flat baselines) and benchmarks (not part of the
test suite).

The harness is domain logic (no Dagster): the pipeline-built corpora of the `memory` method come in through a
builder the CLI injects (`memory_cli/eval_build.py`).
"""

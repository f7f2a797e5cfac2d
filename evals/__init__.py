"""Evaluation harness: LongMemEval and LoCoMo retrieval (and QA with a configured LLM), flat baselines.

Domain logic only (no Dagster): the pipeline-built corpora of the `memory` method come in through a
builder the CLI injects (`memory_cli/eval_cmd.py`).
"""

"""Evaluation: the LongMemEval / LoCoMo harness (retrieval and QA, flat baselines, ablations), the extraction
gold sets and their scoring, and the speed benchmarks (`evals.benchmarks`). None of it is part of the product
or the test suite; the product never imports it.

The harness itself imports no Dagster: the pipeline-built corpora of the `memory` method come from a builder
(`evals.pipeline`, over the project's in-process runner `memory_assets.runner`) that the caller injects.
"""

"""Builds a benchmark haystack as its own corpus through the real pipeline (the `memory` method's corpora).

One corpus per LongMemEval question / LoCoMo conversation, named `eval-<benchmark>__<record id>` in the
memory home the CLI runs against, registered with `plan_corpora/register` like `memory-os corpus add` and
materialised through every stage in this process. A rerun re-materialises (incrementally) the same corpus.
"""

from __future__ import annotations

import re

from evals.benchmarks import Haystack
from evals.retrievers.memory import CorpusBuilder, PipelineCorpus
from memory_core.corpora import plan_corpora, register
from memory_core.errors import MemoryOSError
from memory_core.store.db import MemoryHome


class EvalBuildError(MemoryOSError):
    """The pipeline failed to build a haystack's corpus."""


def eval_corpus_name(benchmark: str, record_id: str) -> str:
    return f"eval-{benchmark}__" + re.sub(r"[^A-Za-z0-9_.\-]", "_", record_id)


def step_seconds(instance, run_id: str) -> dict[str, float]:
    """Wall seconds per step (asset) of a finished run, from its event log."""
    started: dict[str, float] = {}
    took: dict[str, float] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None or not event.step_key:
            continue
        if event.event_type_value == "STEP_START":
            started[event.step_key] = entry.timestamp
        elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and event.step_key in started:
            took[event.step_key] = entry.timestamp - started[event.step_key]
    return took


def pipeline_corpus_builder(home: MemoryHome, benchmark: str, data_path: str) -> CorpusBuilder:
    from memory_assets.definitions import defs
    from memory_assets.partitions import corpus_partitions
    from memory_cli.instance import cli_run_config, get_instance, materialize_corpus

    instance = get_instance(home)
    run_config = cli_run_config(home)

    def build(haystack: Haystack) -> PipelineCorpus:
        name = eval_corpus_name(benchmark, haystack.haystack_id)
        register(home, plan_corpora(name, data_path, benchmark, record_id=haystack.haystack_id))
        if not instance.has_dynamic_partition(corpus_partitions.name, name):
            instance.add_dynamic_partitions(corpus_partitions.name, [name])
        result = materialize_corpus(defs, instance, name, None, run_config=run_config, progress=False)
        if not result.success:
            raise EvalBuildError(
                f"building corpus {name} failed (Dagster run {result.run_id}); see its run logs"
            )
        return PipelineCorpus(home.corpus(name), step_seconds(instance, result.run_id))

    return build

"""Builds a benchmark haystack as its own corpus through the real pipeline (the `memory` method's corpora).

One corpus per LongMemEval question / LoCoMo conversation, named `eval-<benchmark>__<record id>` in the
memory home the run uses, registered with `plan_corpora` like `memory-os corpus add` and materialised through
every stage in this process by the project's runner (`memory_assets.runner`). A rerun re-materialises
(incrementally) the same corpus. Dagster is imported when a builder is made, not when this module is.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from evals.datasets import Haystack
from evals.retrievers.memory import CorpusBuilder, PipelineCorpus
from memory_core.corpora import plan_corpora
from memory_core.errors import MemoryOSError
from memory_core.store.db import MemoryHome

if TYPE_CHECKING:
    from memory_assets.runner import CorpusRunner


class EvalBuildError(MemoryOSError):
    """The pipeline failed to build a haystack's corpus."""


def eval_corpus_name(benchmark: str, record_id: str) -> str:
    return f"eval-{benchmark}__" + re.sub(r"[^A-Za-z0-9_.\-]", "_", record_id)


def pipeline_corpus_builder(
    home: MemoryHome, benchmark: str, data_path: str, runner: CorpusRunner | None = None
) -> CorpusBuilder:
    """A builder of haystack corpora in `home`; `runner` (bound to the same home) defaults to one on the
    instance in DAGSTER_HOME."""
    if runner is None:
        from memory_assets.instance import memory_instance
        from memory_assets.runner import CorpusRunner

        runner = CorpusRunner(home, memory_instance(home))

    planned: dict[str, list] = {}  # a haystack's sources, planned once (planning reads the whole data file)

    def build(haystack: Haystack) -> PipelineCorpus:
        name = eval_corpus_name(benchmark, haystack.haystack_id)
        if name not in planned:
            planned[name] = plan_corpora(name, data_path, benchmark, record_id=haystack.haystack_id)
        runner.register(planned[name])
        run = runner.materialize(name)
        if not run.success:
            raise EvalBuildError(
                f"building corpus {name} failed (Dagster run {run.run_id}); see its run logs"
            )
        return PipelineCorpus(runner.home.corpus(name), run.step_seconds())

    return build

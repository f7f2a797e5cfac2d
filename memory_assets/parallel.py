"""Several corpus partitions built at once: one run process per partition, as Dagster's run launcher does it.

Dagster's in-process `materialize` is not thread-safe (each run reconfigures logging), and a corpus's
stores have one writer at a time (`CorpusStore.write_lock`), so the unit of parallelism is the partition
run in its own process — what `DefaultRunLauncher` (a process per run) and `K8sRunLauncher` (a pod per
run, deploy/) do under the instance's run coordinator, whose `dagster/partition` tag limit keeps one run per
corpus. This is that, without a daemon: `workers` processes, each materialising whole partitions with the
in-process runner on the persistent instance (DAGSTER_HOME: SQLite, or Postgres with dagster-postgres), so
every run is in the UI. Different corpora share nothing but the instance and the read-only caches.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from memory_core.errors import InputError
from memory_core.store.db import MemoryHome


@dataclass(frozen=True)
class PartitionRun:
    """What one partition's run process reports back."""

    corpus: str
    success: bool
    passed: bool
    seconds: float
    run_id: str
    failed_checks: tuple[str, ...] = ()
    failure: str | None = None  # why the run failed: its first failed step and that step's error


def _materialize_one(
    root: str, url_template: str | None, corpus: str, resource_config: Mapping[str, Mapping[str, Any]]
) -> PartitionRun:
    """In the run process: the runner on the persistent instance, resources rebuilt from plain config."""
    from memory_assets.definitions import default_resources
    from memory_assets.instance import memory_instance
    from memory_assets.runner import CorpusRunner

    home = MemoryHome.resolve(root, url_template)
    defaults = default_resources()
    resources = {key: type(defaults[key])(**dict(fields)) for key, fields in resource_config.items()}
    run = CorpusRunner(home, memory_instance(home), resources=resources).materialize(corpus)
    return PartitionRun(
        corpus,
        run.success,
        run.passed,
        round(run.seconds, 2),
        run.run_id,
        tuple(run.failed_checks()),
        run.failure(),
    )


def materialize_in_parallel(
    home: MemoryHome,
    corpora: Sequence[str],
    workers: int = 2,
    resource_config: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[PartitionRun]:
    """Materialise every asset of each registered corpus, `workers` partition runs at a time, each in its
    own process. `resource_config` overrides resources as plain field values (they cross a process
    boundary), e.g. `{"embeddings": {"provider": "hashing"}}`. Results in the order of `corpora`."""
    if len(set(corpora)) != len(corpora):
        raise InputError("a corpus appears twice: one writer per corpus, one run per partition at a time")
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no inherited locks or threads
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=context) as pool:
        futures = [
            pool.submit(
                _materialize_one, str(home.root), home.url_template, corpus, dict(resource_config or {})
            )
            for corpus in corpora
        ]
        return [future.result() for future in futures]

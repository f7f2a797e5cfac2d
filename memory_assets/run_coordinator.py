"""The instance's run coordinator: the queued one, plus one rule for runs the UI launches without a corpus.

Every asset and check is partitioned by corpus, but a run can be launched without a partition (a check
selection from the UI or GraphQL; Dagster then fails every step: "Cannot access partition_key for a
non-partitioned run"). Such a run is fanned out instead: one run per registered corpus partition, each with the same
selection, and the unpartitioned run is marked canceled with a message naming them.
"""

from __future__ import annotations

import uuid

from dagster._core.run_coordinator import QueuedRunCoordinator, SubmitRunContext
from dagster._core.storage.dagster_run import DagsterRun, DagsterRunStatus
from dagster._core.storage.tags import PARTITION_NAME_TAG

from memory_assets.partitions import corpus_partitions


class CorpusRunCoordinator(QueuedRunCoordinator):
    def submit_run(self, context: SubmitRunContext) -> DagsterRun:
        run = context.dagster_run
        if PARTITION_NAME_TAG in run.tags or not _selects_corpus_work(run):
            return super().submit_run(context)
        corpora = sorted(self._instance.get_dynamic_partitions(corpus_partitions.name))
        children = []
        for corpus in corpora:
            child = run.with_status(DagsterRunStatus.NOT_STARTED)._replace(
                run_id=str(uuid.uuid4()), tags={**run.tags, PARTITION_NAME_TAG: corpus}
            )
            self._instance.add_run(child)
            children.append(super().submit_run(SubmitRunContext(child, context.workspace)).run_id)
        why = (
            f"launched without a corpus partition: fanned out to one run per corpus ({len(children)}: "
            + (", ".join(f"{c} → {r}" for c, r in zip(corpora, children, strict=True)) or "none registered")
            + ")"
        )
        self._instance.report_run_canceling(run, message=why)
        self._instance.report_run_canceled(run, message=why)
        return self._instance.get_run_by_id(run.run_id) or run


def _selects_corpus_work(run: DagsterRun) -> bool:
    """Only asset checks or assets of this code location are selected (all of them are per corpus)."""
    return bool(run.asset_check_selection or run.asset_selection)

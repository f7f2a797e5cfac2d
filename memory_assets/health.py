"""Pipeline health of one corpus, read from the Dagster instance: per stage the last materialisation of the
corpus's partition — when, by which run, its quality figures and row count — the asset checks evaluated in
that run with their outcome and severity, and the corpus's recent runs. The explorer's health page shows it
with links into the Dagster UI."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
from dagster._core.events import DagsterEventType

from memory_assets.catalog import QUALITY_FIGURES
from memory_assets.common import FIGURES_KEY, QUALITY_PREFIX
from memory_assets.instance import INSTANCE_TEMPLATE
from memory_assets.run_health import PARTITION_TAG
from memory_core.settings import DAGSTER_HOME
from memory_core.store.db import MemoryHome

# the stages in the order a build runs them (every asset of the code location: tests/test_health.py)
STAGE_ORDER = (
    "messages",
    "segments",
    "mentions",
    "user_reactions",
    "canonical_concepts",
    "claims",
    "fact_states",
    "repairs",
    "topics",
    "weighted_links",
    "domains",
    "graph",
    "indexes",
    "gardener_triage",
    "gardener_actions",
)
RECENT_RUNS = 8


@dataclass
class CheckOutcome:
    name: str
    passed: bool
    severity: str  # ERROR | WARN


@dataclass
class StageHealth:
    asset: str
    materialized_at: datetime | None = None
    run_id: str | None = None
    rows: int | None = None
    figures: dict[str, object] = field(default_factory=dict)  # the stage's curated quality figures
    checks: list[CheckOutcome] = field(default_factory=list)

    @property
    def failed_checks(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


@dataclass
class RunSummary:
    run_id: str
    job: str
    status: str
    started_at: datetime | None
    seconds: float | None


@dataclass
class CorpusHealth:
    corpus: str
    stages: list[StageHealth]
    runs: list[RunSummary]

    @property
    def built(self) -> int:
        return sum(1 for s in self.stages if s.materialized_at is not None)


def reading_instance(home: MemoryHome) -> dg.DagsterInstance | None:
    """The Dagster instance the home's builds ran on (DAGSTER_HOME, else `<memory home>/dagster`), opened
    without creating or seeding anything; None when there is none yet."""
    configured = DAGSTER_HOME.get()
    path = Path(configured).expanduser() if configured else home.root / "dagster"
    if not (path / INSTANCE_TEMPLATE).exists():
        return None
    return dg.DagsterInstance.from_config(str(path))


def corpus_health(instance: dg.DagsterInstance, corpus: str) -> CorpusHealth:
    stages = [_stage(instance, asset, corpus) for asset in STAGE_ORDER]
    checks = _checks_by_run(instance, {s.run_id for s in stages if s.run_id})
    for s in stages:
        s.checks = checks.get((s.run_id, s.asset), [])
    return CorpusHealth(corpus, stages, _runs(instance, corpus))


def _stage(instance: dg.DagsterInstance, asset: str, corpus: str) -> StageHealth:
    found = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[corpus]), limit=1
    ).records
    if not found:
        return StageHealth(asset)
    record = found[0]
    metadata = record.asset_materialization.metadata if record.asset_materialization else {}
    figures: dict[str, object] = {}
    unplotted = getattr(metadata.get(FIGURES_KEY), "value", None) or {}
    for name in QUALITY_FIGURES.get(asset, ()):
        entry = metadata.get(f"{QUALITY_PREFIX}{name}")
        value = getattr(entry, "value", None) if entry is not None else unplotted.get(name)
        if value is not None:
            figures[name] = value
    rows = getattr(metadata.get("dagster/row_count"), "value", None)
    return StageHealth(
        asset,
        materialized_at=datetime.fromtimestamp(record.timestamp, UTC),
        run_id=record.run_id,
        rows=int(rows) if rows is not None else None,
        figures=figures,
    )


def _checks_by_run(
    instance: dg.DagsterInstance, run_ids: set[str]
) -> dict[tuple[str, str], list[CheckOutcome]]:
    """(run id, asset) → the checks evaluated on that asset in that run."""
    out: dict[tuple[str, str], list[CheckOutcome]] = {}
    for run_id in run_ids:
        records = instance.get_records_for_run(
            run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
        ).records
        for r in records:
            evaluation = r.event_log_entry.dagster_event.event_specific_data
            key = (run_id, evaluation.asset_key.to_user_string())
            out.setdefault(key, []).append(
                CheckOutcome(evaluation.check_name, bool(evaluation.passed), evaluation.severity.value)
            )
    return out


def _runs(instance: dg.DagsterInstance, corpus: str) -> list[RunSummary]:
    records = instance.get_run_records(
        filters=dg.RunsFilter(tags={PARTITION_TAG: corpus}), limit=RECENT_RUNS, order_by="create_timestamp"
    )
    out = []
    for r in records:
        started = r.start_time
        ended = r.end_time
        out.append(
            RunSummary(
                run_id=r.dagster_run.run_id,
                job=r.dagster_run.job_name,
                status=r.dagster_run.status.value,
                started_at=datetime.fromtimestamp(started, UTC) if started else None,
                seconds=round(ended - started, 1) if started and ended else None,
            )
        )
    return out

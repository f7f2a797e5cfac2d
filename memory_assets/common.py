"""Helpers shared by the stage modules (no stage logic here): the store of a partition, and the Dagster
rendering of core reports and contract results."""

from __future__ import annotations

import contextlib
import functools
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from memory_assets.partitions import corpus_partitions
from memory_core.reports import CheckResult, StageReport
from memory_core.store.db import CorpusStore
from memory_resources.storage import MemoryStorage


def corpus_store(
    context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext, storage: MemoryStorage
) -> CorpusStore:
    return storage.corpus(context.partition_key)


def run_materializes(context: dg.AssetExecutionContext, asset_key: str) -> bool:
    """Whether this run also materialises `asset_key` (the assets its job, or its subset of a job, selected)."""
    return dg.AssetKey(asset_key) in context.job_def.asset_layer.selected_asset_keys


def md_table(
    rows: Sequence[Mapping], columns: Iterable[str] | None = None, limit: int = 30
) -> dg.MetadataValue:
    """A Markdown table for the asset's metadata panel."""
    rows = list(rows)[:limit]
    if not rows:
        return dg.MetadataValue.md("_none_")
    cols = list(columns or rows[0].keys())

    def cell(v: object) -> str:
        text = str(v).replace("|", "\\|").replace("\n", " ")
        return text if len(text) <= 160 else text[:157] + "…"

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in cols) + " |" for r in rows]
    return dg.MetadataValue.md("\n".join(lines))


@dataclass(frozen=True)
class Table:
    """A report's list of rows shown as a Markdown table: these columns (default: the first row's keys),
    the first `limit` rows."""

    columns: Sequence[str] | None = None
    limit: int = 30


def dagster_metadata(
    figures: Mapping[str, object],
    tables: Mapping[str, Table] | None = None,
    paths: Collection[str] = (),
    quality: Collection[str] | None = None,
) -> dict[str, object]:
    """Dagster's rendering of a report's plain figures: the named row lists as Markdown tables, the named
    paths as paths, other lists and dicts as JSON, timings under `timing/`, scalars as they are.

    With `quality` (a materialisation: the UI plots every number of it over time), only the named figures
    stay numbers, under `quality/`; every other number goes into the one JSON entry `figures`, visible but
    not plotted."""
    tables = tables or {}
    out: dict[str, object] = {}
    unplotted: dict[str, object] = {}
    for key, value in figures.items():
        if key in tables:
            out[key] = md_table(value, tables[key].columns, tables[key].limit)  # type: ignore[arg-type]
        elif key in paths:
            out[key] = dg.MetadataValue.path(str(value))
        elif isinstance(value, (dict, list, tuple)):
            out[key] = dg.MetadataValue.json(list(value) if isinstance(value, tuple) else value)
        elif is_timing(key):
            out[f"{TIMING_PREFIX}{key}"] = value  # timings plot apart from the quality figures
        elif quality is not None and key in quality:
            out[f"{QUALITY_PREFIX}{key}"] = value
        elif quality is not None and _is_number(value):
            unplotted[key] = value
        else:
            out[key] = value
    if unplotted:
        if FIGURES_KEY in out:  # a report's own figure of that name would be overwritten
            raise ValueError(f"a report figure is named {FIGURES_KEY!r}")
        out[FIGURES_KEY] = dg.MetadataValue.json(unplotted)
    return out


TIMING_PREFIX = "timing/"
QUALITY_PREFIX = "quality/"
FIGURES_KEY = "figures"


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_timing(key: str) -> bool:
    return (
        key == "seconds"
        or "_seconds" in key
        or key.startswith("seconds_")
        or key.endswith(("_ms", "_per_second"))
    )


def report_figures(metadata: Mapping[str, object]) -> dict[str, object]:
    """A materialisation's metadata read back as the report's plain figures (the inverse of the renaming
    above: `quality/x` and `timing/x` as `x`, the entries of `figures` as keys of their own)."""
    out: dict[str, object] = {}
    for key, entry in metadata.items():
        value = getattr(entry, "value", entry)
        if key == FIGURES_KEY and isinstance(value, dict):
            out.update(value)
        else:
            out[key.removeprefix(QUALITY_PREFIX).removeprefix(TIMING_PREFIX)] = value
    return out


def materialize_result(
    report: StageReport,
    *,
    store: CorpusStore | None = None,
    asset_key: str | None = None,
    tables: Mapping[str, Table] | None = None,
    paths: Collection[str] = (),
    extra: Mapping[str, object] | None = None,
    also: Sequence[StageReport] = (),
) -> dg.MaterializeResult:
    """The materialisation of a stage report (and the reports of work the asset did `also`, their figures
    beside its own; `extra`: metadata only the asset knows, already rendered): its
    curated quality figures (`QUALITY_FIGURES`) plotted under `quality/`, its other numbers in `figures`; with
    the `store` and `asset_key`, its data version is the content hash of the tables the asset writes (an
    unchanged rebuild marks nothing downstream stale) and `dagster/row_count` the rows of its main table."""
    from memory_assets.catalog import QUALITY_FIGURES, version_metadata

    quality = QUALITY_FIGURES.get(asset_key or "", ())
    figures = dict(report.as_metadata())
    for more in also:
        figures.update(more.as_metadata())
    metadata = {**dagster_metadata(figures, tables, paths, quality), **(extra or {})}
    version = None
    if store is not None and asset_key is not None:
        version, counts = version_metadata(store, asset_key)
        metadata.update(counts)
    return dg.MaterializeResult(asset_key=asset_key, metadata=metadata, data_version=version)


def check_result(
    result: CheckResult, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
) -> dg.AssetCheckResult:
    """The evaluation of a core contract; its figures become the check's metadata."""
    return dg.AssetCheckResult(
        passed=bool(result.passed), severity=severity, metadata=dagster_metadata(result.as_metadata())
    )


class _PartitionView:
    """A check's context as seen for one corpus partition (its `partition_key`; all else delegated)."""

    def __init__(self, context: dg.AssetCheckExecutionContext, partition_key: str):
        self._context = context
        self.partition_key = partition_key
        self.has_partition_key = True

    def __getattr__(self, name: str):
        return getattr(self._context, name)


@contextlib.contextmanager
def preview_quiet() -> Iterator[None]:
    """Partitioned asset checks are a Dagster preview API: said once in the README, not once per check in
    every process that loads the code location (the UI's code server and each run's worker); source code
    references are beta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        warnings.simplefilter("ignore", dg.BetaWarning)
        yield


SEVERITY_METADATA_KEY = "memory_os/severity"


def corpus_check(
    asset: dg.AssetsDefinition | str,
    *,
    description: str,
    blocking: bool = False,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
) -> Callable[[Callable[..., CheckResult]], dg.AssetChecksDefinition]:
    """A partitioned asset check of `asset` from a function returning a core `CheckResult`. The severity a
    failure has is declared here, once, and shown in the check's metadata; the function keeps its
    signature, so Dagster injects its context, config and resources as usual."""

    def decorate(evaluate: Callable[..., CheckResult]) -> dg.AssetChecksDefinition:
        @functools.wraps(evaluate)
        def run(context, *args, **kwargs) -> dg.AssetCheckResult:
            if context.has_partition_key:
                return check_result(evaluate(context, *args, **kwargs), severity)
            # the UI's "Execute all" of a check launches a run without a partition: check every corpus
            corpora = sorted(context.instance.get_dynamic_partitions(corpus_partitions.name))
            results = {key: evaluate(_PartitionView(context, key), *args, **kwargs) for key in corpora}
            failed = [key for key, r in results.items() if not r.passed]
            return dg.AssetCheckResult(
                passed=not failed,
                severity=severity,
                metadata={
                    "corpora_checked": len(results),
                    "corpora_failed": dg.MetadataValue.json(failed),
                    "by_corpus": md_table([{"corpus": k, "passed": r.passed} for k, r in results.items()]),
                },
            )

        with preview_quiet():
            return dg.asset_check(
                asset=asset,
                partitions_def=corpus_partitions,
                blocking=blocking,
                description=description,
                metadata={SEVERITY_METADATA_KEY: severity.value},
            )(run)

    return decorate


def check(
    passed: bool, severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR, **metadata
) -> dg.AssetCheckResult:
    """A check result from figures computed in the asset layer (prefer a core contract and `check_result`)."""
    return dg.AssetCheckResult(passed=bool(passed), severity=severity, metadata=metadata)

"""Helpers shared by the stage modules (no stage logic here): the store of a partition, and the Dagster
rendering of core reports and contract results."""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import dagster as dg

from memory_assets.partitions import corpus_partitions
from memory_core.reports import CheckResult, StageReport
from memory_core.store.db import CorpusStore
from memory_resources.storage import MemoryStorage


def corpus_store(context: dg.AssetExecutionContext, storage: MemoryStorage) -> CorpusStore:
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
    checks: Sequence[dg.AssetCheckResult] = (),
) -> dg.MaterializeResult:
    """The materialisation of a stage report (and the reports of work the asset did `also`, their figures
    beside its own; `extra`: metadata only the asset knows, already rendered; `checks`: its contracts'
    results, `evaluate_contracts`): its
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
    return dg.MaterializeResult(
        asset_key=asset_key, metadata=metadata, data_version=version, check_results=list(checks)
    )


def check_result(
    result: CheckResult,
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR,
    asset: str | None = None,
    name: str | None = None,
) -> dg.AssetCheckResult:
    """The evaluation of a core contract (of check `name` on `asset`); its figures become the check's metadata."""
    return dg.AssetCheckResult(
        passed=bool(result.passed),
        severity=severity,
        metadata=dagster_metadata(result.as_metadata()),
        asset_key=asset,
        check_name=name,
    )


@contextlib.contextmanager
def preview_quiet() -> Iterator[None]:
    """Partitioned asset check specs are a Dagster preview API: said once in the README, not in every process
    that loads the code location (the UI's code server and each run's worker); source code references are
    beta."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", dg.PreviewWarning)
        warnings.simplefilter("ignore", dg.BetaWarning)
        yield


SEVERITY_METADATA_KEY = "memory_os/severity"


@dataclass(frozen=True)
class Contract:
    """A core contract of an asset, shown as one of its partitioned asset checks and evaluated in the asset's
    own step once it has written (a step per check cost an unchanged run 34 of its 48 steps and ~1 s of
    Dagster's events). `evaluate` takes the named `inputs` the asset provides, in that order ("store", or what
    else the asset holds: an embedder, its report's figures, the open graph). The severity a failure has is
    declared here, once, and shown in the check's metadata; a blocking ERROR failure fails the step after its
    materialisation is recorded, so downstream assets do not run."""

    name: str
    description: str
    evaluate: Callable[..., CheckResult]
    blocking: bool = False
    severity: dg.AssetCheckSeverity = dg.AssetCheckSeverity.ERROR
    inputs: tuple[str, ...] = ("store",)

    def spec(self, asset: str) -> dg.AssetCheckSpec:
        with preview_quiet():
            return dg.AssetCheckSpec(
                self.name,
                asset=asset,
                description=self.description,
                blocking=self.blocking,
                metadata={SEVERITY_METADATA_KEY: self.severity.value},
                partitions_def=corpus_partitions,
            )


def check_specs(asset: str, contracts: Sequence[Contract]) -> list[dg.AssetCheckSpec]:
    """The asset checks an asset declares for its contracts."""
    return [c.spec(asset) for c in contracts]


def evaluate_contracts(
    context: dg.AssetExecutionContext, asset: str, contracts: Sequence[Contract], **inputs: object
) -> list[dg.AssetCheckResult]:
    """Each contract of `asset` evaluated on the `inputs` it names. A contract that raises fails with the
    error in its metadata and the run's log: what the asset wrote stands, as when the check was a step apart."""
    results = []
    for contract in contracts:
        missing = [n for n in contract.inputs if n not in inputs]
        if missing:
            raise TypeError(f"check {contract.name} on {asset} needs {missing}, not given by the asset")
        try:
            result = contract.evaluate(*(inputs[n] for n in contract.inputs))
        except Exception as exc:  # noqa: BLE001 - a contract's own failure is its check's result
            error = f"{type(exc).__name__}: {exc}"
            context.log.error(f"check {contract.name} on {asset} could not be evaluated: {error}")
            result = CheckResult(False, {"error": error})
        results.append(check_result(result, contract.severity, asset, contract.name))
    return results

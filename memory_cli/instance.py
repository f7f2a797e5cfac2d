"""The Dagster instance the CLI runs against, and in-process materialisation with a progress display."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path

import dagster as dg

from memory_core.store.db import MemoryHome

_PROJECT_ROOT = Path(__file__).resolve().parents[1]
_TAG = "memory_os/cli_invocation"


def ensure_dagster_home(home: MemoryHome) -> Path:
    """DAGSTER_HOME, or `<memory home>/dagster` seeded with the project's dagster.yaml when unset."""
    if os.environ.get("DAGSTER_HOME"):
        path = Path(os.environ["DAGSTER_HOME"]).expanduser().resolve()
    else:
        path = home.root / "dagster"
        os.environ["DAGSTER_HOME"] = str(path)
    path.mkdir(parents=True, exist_ok=True)
    config = path / "dagster.yaml"
    template = _PROJECT_ROOT / "dagster.yaml"
    if not config.exists() and template.exists():
        shutil.copyfile(template, config)
    return path


def get_instance(home: MemoryHome) -> dg.DagsterInstance:
    ensure_dagster_home(home)
    return dg.DagsterInstance.get()


def cli_run_config(home: MemoryHome, ops: dict | None = None) -> dict:
    """Run config of an in-process build from the CLI: the storage resource pointed at `home`, and per-asset
    config (`ops`) when given."""
    return {
        "resources": {"storage": {"config": {"home": str(home.root), "database_url": home.url_template}}},
        # the progress display replaces Dagster's console log; run logs stay complete in the instance
        "loggers": {"console": {"config": {"log_level": "ERROR"}}},
        **({"ops": ops} if ops else {}),
    }


class _Progress(threading.Thread):
    """Prints one line per step of a run by following its event log (the console log is silenced)."""

    def __init__(self, instance: dg.DagsterInstance, tag_value: str, stream=sys.stderr):
        super().__init__(daemon=True)
        self.instance = instance
        self.tag_value = tag_value
        self.stream = stream
        self.stop = threading.Event()
        self.started: dict[str, float] = {}

    def run(self) -> None:
        run_id, cursor = None, None
        while True:
            finished = self.stop.is_set()
            if run_id is None:
                runs = self.instance.get_runs(filters=dg.RunsFilter(tags={_TAG: self.tag_value}), limit=1)
                run_id = runs[0].run_id if runs else None
            if run_id is not None:
                conn = self.instance.get_records_for_run(run_id, cursor=cursor)
                cursor = conn.cursor
                for record in conn.records:
                    self._show(record.event_log_entry)
            if finished:
                return
            self.stop.wait(0.3)

    def _show(self, entry) -> None:
        event = entry.dagster_event
        if event is None:
            return
        step = event.step_key or ""
        kind = event.event_type_value
        now = entry.timestamp
        if kind == "STEP_START":
            self.started[step] = now
        elif kind == "STEP_SUCCESS":
            took = now - self.started.get(step, now)
            print(f"  ✓ {step} ({took:.1f}s)", file=self.stream, flush=True)
        elif kind == "STEP_FAILURE":
            err = event.step_failure_data.error if event.step_failure_data else None
            message = err.message.strip() if err else "failed"
            print(f"  ✗ {step}: {message}", file=self.stream, flush=True)
        elif kind == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            if data is not None and not data.passed:
                print(
                    f"  ! check {data.check_name} on {data.asset_key.to_user_string()} failed ({data.severity.value})",
                    file=self.stream,
                    flush=True,
                )


def materialize_corpus(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    corpus: str,
    selection: Sequence[str] | None = None,
    run_config: dict | None = None,
    progress: bool = True,
) -> dg.ExecuteInProcessResult:
    """Materialise the selected assets (default: all) of one corpus partition in this process."""
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    if selection:
        unknown = [s for s in selection if dg.AssetKey.from_user_string(s) not in keys]
        if unknown:
            known = ", ".join(sorted(k.to_user_string() for k in keys))
            raise dg.DagsterInvariantViolationError(f"unknown asset(s): {', '.join(unknown)}; known: {known}")
        wanted = dg.AssetSelection.assets(*[dg.AssetKey.from_user_string(s) for s in selection])
    else:
        wanted = dg.AssetSelection.all()
    tag_value = uuid.uuid4().hex
    follower = _Progress(instance, tag_value) if progress else None
    if follower:
        follower.start()
    try:
        return dg.materialize(
            assets=[*defs.assets, *(defs.asset_checks or [])],
            selection=wanted,
            instance=instance,
            partition_key=corpus,
            resources=defs.resources,
            run_config=run_config or {},
            raise_on_error=False,
            tags={_TAG: tag_value},
        )
    finally:
        if follower:
            follower.stop.set()
            follower.join(timeout=10)

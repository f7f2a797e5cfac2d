"""The in-process runner: register a corpus, add its partition, materialise its assets in this process.

The one implementation behind `memory-os corpus add|materialize|demo`, the eval harness's pipeline-built
corpora, the benchmarks and the tests:

    runner = CorpusRunner(home, memory_instance(home))            # or any instance, e.g. dg.instance_for_test()
    runner.register(plan_corpora("notes", "export.json"))         # registry rows + dynamic partitions
    run = runner.materialize("notes", progress=sys.stderr)         # every stage; or selection=["messages"]
    run.success, run.passed, run.run_id, run.seconds, run.step_seconds()

The storage resource is always bound to the runner's memory home; `resources` override the code location's
other defaults (a hashing embedder in tests, a fixed LLM in an eval). With `progress`, one line per finished
step (and per failed check) is printed from the run's event log, which replaces Dagster's console log; the
run's full logs stay in the instance. Run health (`run_health`): before a run, runs whose process is gone
are marked failed and their pool slots freed; a wait for a pool slot or the corpus lock is said with whom
and how long; SIGINT/SIGTERM cancel the run and end the process.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import time
import uuid
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

import dagster as dg

from memory_assets.run_health import (
    RunWaits,
    cancel_run,
    describe_reaped,
    process_tags,
    reap_dead_runs,
    run_interruptibly,
    wait_for_corpus_lock,
)
from memory_core.corpora import CorpusSource, register, registered_source
from memory_core.errors import InputError
from memory_core.progress import PREFIX as PROGRESS_PREFIX
from memory_core.store.db import MemoryHome
from memory_resources.storage import MemoryStorage

_TAG = "memory_os/runner_invocation"
# the progress lines replace Dagster's console log; a run's logs stay whole in the instance
_QUIET_CONSOLE = {"console": {"config": {"log_level": "CRITICAL"}}}


def bound_resources(home: MemoryHome, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Every resource of the code location with storage bound to `home`, and `overrides` on top (Dagster
    needs resources for every asset passed to `materialize`, selected or not)."""
    from memory_assets.definitions import default_resources

    storage = MemoryStorage(home=str(home.root), database_url=home.url_template)
    return {**default_resources(), "storage": storage, **(overrides or {})}


@dataclass
class CorpusRun:
    """One finished in-process run of a corpus partition."""

    corpus: str
    result: dg.ExecuteInProcessResult
    seconds: float
    instance: dg.DagsterInstance

    @property
    def success(self) -> bool:
        return self.result.success

    @property
    def run_id(self) -> str:
        return self.result.run_id

    def failed_checks(self, severity: str = "ERROR") -> list[str]:
        """Checks of the run that failed with `severity`, as "check on asset" (a non-blocking ERROR check
        does not fail the Dagster run; the command fails on it all the same)."""
        return sorted(
            f"{e.check_name} on {e.asset_key.to_user_string()}"
            for e in self.result.get_asset_check_evaluations()
            if not e.passed and e.severity.value == severity
        )

    def user_error(self) -> str | None:
        """The message of the error raised on purpose (a bad input, a corpus not registered) that failed a
        step of the run, if one did: the one line a user is shown instead of the step's traceback."""
        for event in self.result.all_events:
            if event.is_step_failure and event.step_failure_data is not None:
                message = user_error_message(event.step_failure_data.error)
                if message:
                    return message
        return None

    def failure(self) -> str | None:
        """Why the run failed, on one line: the first failed step and its innermost error (or the run's
        own failure message when no step failed); None for a successful run."""
        if self.result.success:
            return None
        for event in self.result.all_events:
            if event.is_step_failure and event.step_failure_data is not None:
                err = event.step_failure_data.error
                return f"{event.step_key}: {user_error_message(err) or _last_cause(err)}"
        for event in self.result.all_events:
            if event.event_type_value == "RUN_FAILURE":
                return event.message or "the run failed before any step"
        return "the run failed before any step"

    @property
    def passed(self) -> bool:
        """The run succeeded and no ERROR-severity check failed."""
        return self.success and not self.failed_checks()

    def step_seconds(self) -> dict[str, float]:
        """Wall seconds per step (asset) of the run, from its event log."""
        started: dict[str, float] = {}
        took: dict[str, float] = {}
        for entry in self.instance.all_logs(self.run_id):
            event = entry.dagster_event
            if event is None or not event.step_key:
                continue
            if event.event_type_value == "STEP_START":
                started[event.step_key] = entry.timestamp
            elif event.event_type_value in ("STEP_SUCCESS", "STEP_FAILURE") and event.step_key in started:
                took[event.step_key] = entry.timestamp - started[event.step_key]
        return took


class CorpusRunner:
    def __init__(
        self,
        home: MemoryHome,
        instance: dg.DagsterInstance,
        resources: Mapping[str, Any] | None = None,
        defs: dg.Definitions | None = None,
    ):
        self.home = home
        self.instance = instance
        self.resources = bound_resources(home, resources)
        self._defs = defs

    @property
    def defs(self) -> dg.Definitions:
        if self._defs is None:  # the code location with this runner's resources bound (a job needs them)
            from memory_assets.definitions import build_definitions

            self._defs = build_definitions(self.resources)
        return self._defs

    # ------------------------------------------------------------------------------------------ corpora
    def register(self, sources: Sequence[CorpusSource]) -> list[CorpusSource]:
        """Register `sources` in the memory home and add their partitions (an existing one is kept)."""
        register(self.home, sources)
        for source in sources:
            self.add_partition(source.name)
        return list(sources)

    def add_partition(self, corpus: str) -> None:
        from memory_assets.partitions import corpus_partitions

        if not self.instance.has_dynamic_partition(corpus_partitions.name, corpus):
            self.instance.add_dynamic_partitions(corpus_partitions.name, [corpus])

    def remove_partition(self, corpus: str) -> None:
        from memory_assets.partitions import corpus_partitions

        if self.instance.has_dynamic_partition(corpus_partitions.name, corpus):
            self.instance.delete_dynamic_partition(corpus_partitions.name, corpus)

    # ------------------------------------------------------------------------------------------ runs
    def materialize(
        self,
        corpus: str,
        selection: Sequence[str] | None = None,
        ops: Mapping[str, Any] | None = None,
        progress: TextIO | None = None,
        notices: TextIO | None = None,
    ) -> CorpusRun:
        """Materialise the selected assets (default: every one) of a registered corpus in this process;
        `ops` is per-asset run config (`{"gardener_actions": {"config": {...}}}`). A failed step does not
        raise: the run says `success=False` and its logs are in the instance. `progress` gets the step
        lines; `notices` (default: `progress`) what run health did or waits on, also when progress is off."""
        registered_source(self.home, corpus)  # a clear error when the corpus is not registered
        wanted = self._selection(selection)
        self.add_partition(corpus)
        say = _sayer(notices if notices is not None else progress)
        reaped = reap_dead_runs(self.instance)  # a killed run's slots would block this one forever
        if reaped:
            say(describe_reaped(reaped))
        wait_for_corpus_lock(self.home.corpus(corpus, readonly=True), say)
        tag = uuid.uuid4().hex
        store = self.home.corpus(corpus, readonly=True)
        follower = _Progress(self.instance, tag, progress, RunWaits(self.instance, say, store))
        follower.start()
        started = time.perf_counter()
        job = self.job_for(wanted)

        def run() -> dg.ExecuteInProcessResult:
            # the named job (not an ephemeral one): CLI and UI runs share one history, re-executable there
            return job.execute_in_process(
                instance=self.instance,
                partition_key=corpus,
                asset_selection=sorted(wanted, key=lambda k: k.to_user_string()),
                resources=self.resources,
                run_config={"loggers": _QUIET_CONSOLE, **({"ops": dict(ops)} if ops else {})},
                raise_on_error=False,
                tags={_TAG: tag, **process_tags()},
            )

        try:
            with _runs_of_the_code_location(self.instance, job.name):
                result = run_interruptibly(
                    run,
                    lambda signum: cancel_run(self.instance, _run_id(self.instance, tag), signum, progress),
                )
        finally:
            follower.stop.set()
            follower.join(timeout=10)
        return CorpusRun(corpus, result, time.perf_counter() - started, self.instance)

    def job_for(self, keys: Collection[dg.AssetKey]) -> dg.JobDefinition:
        """The smallest named job of the code location whose selection covers `keys`."""
        graph = self.defs.resolve_asset_graph()
        covering = []
        for job in self.defs.resolve_all_job_defs():
            if job.name.startswith("__") or job.asset_layer is None:
                continue
            own = set(job.asset_layer.asset_graph.get_all_asset_keys()) & graph.get_all_asset_keys()
            executable = {k for k in own if job.asset_layer.asset_graph.get(k).is_executable}
            if set(keys) <= executable:
                covering.append((len(executable), job.name, job))
        if not covering:
            raise InputError(
                f"no job of the code location builds {', '.join(k.to_user_string() for k in keys)}"
            )
        return min(covering, key=lambda c: c[:2])[2]

    def selected_keys(self, selection: Sequence[str] | None) -> list[str]:
        """The asset keys a selection of names stands for (see `_selection`), sorted."""
        return sorted(k.to_user_string() for k in self._selection(selection))

    def _selection(self, selection: Sequence[str] | None) -> set[dg.AssetKey]:
        """Asset keys of `selection`: asset keys, step names (`extraction`) or stage groups (`ingestion`),
        each expanded to every key of its multi-asset (they are built together)."""
        graph = self.defs.resolve_asset_graph()
        if not selection:
            return set(graph.get_all_asset_keys())
        names = self._selectable_names()
        unknown = [s for s in selection if s not in names]
        if unknown:
            raise InputError(
                f"unknown asset or stage name(s): {', '.join(unknown)}; known: {', '.join(sorted(names))}"
            )
        return set().union(*(names[s] for s in selection))

    def _selectable_names(self) -> dict[str, set[dg.AssetKey]]:
        groups: dict[str, set[dg.AssetKey]] = {}
        nodes: dict[str, set[dg.AssetKey]] = {}
        for assets_def in self.defs.assets or []:
            if not isinstance(assets_def, dg.AssetsDefinition) or not assets_def.is_executable:
                continue
            keys = set(assets_def.keys)
            for group in assets_def.group_names_by_key.values():
                groups.setdefault(group, set()).update(keys)
            nodes[assets_def.node_def.name] = keys  # the step name the progress lines print
            nodes.update({key.to_user_string(): keys for key in keys})
        return {**groups, **nodes}  # an asset key wins over a stage group of the same name (`topics`)


def user_error_message(error) -> str | None:
    """The message of a `MemoryOSError` in a step failure's chain of causes (a `SerializableErrorInfo`)."""
    from memory_core import errors

    ours = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, Exception)
    }
    while error is not None:
        if error.cls_name in ours:
            return error.message.split(": ", 1)[1].strip() if ": " in error.message else error.message.strip()
        error = error.cause
    return None


def _last_cause(error) -> str:
    """The innermost error of a chain, on one line (the outer ones are Dagster's wrappers)."""
    if error is None:
        return "failed"
    while error.cause is not None:
        error = error.cause
    return error.message.strip().splitlines()[0] if error.message.strip() else error.cls_name or "failed"


# the code location's name in the packaged workspace.yaml (a test keeps the two equal)
CODE_LOCATION = "memory_os"


@contextlib.contextmanager
def _runs_of_the_code_location(instance: dg.DagsterInstance, job_name: str) -> Iterator[None]:
    """Runs this process creates are recorded as runs of the code location's job, so the UI can re-execute
    them (Dagster re-executes a run through its `remote_job_origin`, which an in-process run lacks; only the
    location and repository names of the origin are used to find the job).

    Private Dagster API on purpose: there is no public one. An in-process run gets no remote origin
    (dagster-io/dagster#19458, "Jobs executed using `execute_in_process` can't be reexecuted in the UI",
    closed without a fix); the public ways to create a run with one (`DagsterGraphQLClient`, `dagster job
    launch`) launch it through a workspace in another process, losing the in-process progress and errors.
    tests/test_ui_graphql.py re-executes a CLI run, so a Dagster upgrade that moves these names fails there."""
    from dagster._core.definitions.repository_definition.valid_definitions import SINGLETON_REPOSITORY_NAME
    from dagster._core.remote_origin import (
        ManagedGrpcPythonEnvCodeLocationOrigin,
        RemoteJobOrigin,
        RemoteRepositoryOrigin,
    )
    from dagster._core.types.loadable_target_origin import LoadableTargetOrigin

    target = LoadableTargetOrigin(
        executable_path=sys.executable, module_name="memory_assets.definitions", attribute="defs"
    )
    location = ManagedGrpcPythonEnvCodeLocationOrigin(target, location_name=CODE_LOCATION)
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(location, SINGLETON_REPOSITORY_NAME), job_name)
    create = instance.create_run_for_job
    instance.create_run_for_job = functools.partial(create, remote_job_origin=origin)  # type: ignore[method-assign]
    try:
        yield
    finally:
        del instance.create_run_for_job  # the class's method again


def _sayer(stream: TextIO | None):
    def say(line: str) -> None:
        if stream is not None:
            print(line, file=stream, flush=True)

    return say


def _run_id(instance: dg.DagsterInstance, tag_value: str) -> str | None:
    runs = instance.get_runs(filters=dg.RunsFilter(tags={_TAG: tag_value}), limit=1)
    return runs[0].run_id if runs else None


class _Progress(threading.Thread):
    """Follows a run's event log: one line per step (when there is a stream), and its pool waits."""

    def __init__(self, instance: dg.DagsterInstance, tag_value: str, stream: TextIO | None, waits: RunWaits):
        super().__init__(daemon=True)
        self.instance = instance
        self.tag_value = tag_value
        self.stream = stream
        self.waits = waits
        self.stop = threading.Event()
        self.started: dict[str, float] = {}
        self.evaluated: dict[str, list[str]] = {}  # a step's check lines, said after the step's own

    def run(self) -> None:
        run_id, cursor = None, None
        while True:
            finished = self.stop.is_set()
            if run_id is None:
                run_id = self.waits.run_id = _run_id(self.instance, self.tag_value)
            if run_id is not None:
                conn = self.instance.get_records_for_run(run_id, cursor=cursor)
                cursor = conn.cursor
                for record in conn.records:
                    self.waits.on_event(record.event_log_entry)
                    lines = self._lines(record.event_log_entry) if self.stream is not None else ()
                    for line in lines:
                        print(line, file=self.stream, flush=True)
                if not finished:
                    self.waits.tick()
            if finished:
                return
            self.stop.wait(0.3)

    def _lines(self, entry) -> list[str]:
        """What an event says: a step's line, then one line per check its asset evaluated (the checks run in
        the asset's step, so their evaluations come before its success)."""
        event = entry.dagster_event
        if event is None:  # a step's log line: only its progress inside the stage is shown
            message = entry.user_message or ""
            if message.startswith(PROGRESS_PREFIX):
                return [f"    … {message.removeprefix(PROGRESS_PREFIX)}"]
            return []
        step = event.step_key or ""
        kind = event.event_type_value
        if kind == "STEP_START":
            self.started[step] = entry.timestamp
        elif kind == "STEP_SUCCESS":
            took = entry.timestamp - self.started.get(step, entry.timestamp)
            return [f"  ✓ {step} ({took:.1f}s)", *self.evaluated.pop(step, [])]
        elif kind == "STEP_FAILURE":
            err = event.step_failure_data.error if event.step_failure_data else None
            message = user_error_message(err) or _last_cause(err)
            return [f"  ✗ {step}: {message}", *self.evaluated.pop(step, [])]
        elif kind == "ASSET_CHECK_EVALUATION":
            data = event.event_specific_data
            if data is not None:
                name = f"check {data.check_name} on {data.asset_key.to_user_string()}"
                line = f"    ✓ {name}" if data.passed else f"    ! {name} failed ({data.severity.value})"
                self.evaluated.setdefault(step, []).append(line)
        return []

"""Run health: a run whose process is gone never blocks the instance, and a run never waits silently.

A run killed with SIGKILL (or on a crashed machine) stays STARTED in the instance and keeps the slots of
the concurrency pools it claimed (`llm`: 2), so every later run of any corpus would block on them. Every
in-process run is tagged with the process that executes it (host, pid, start time); before a run starts
and while one of its steps waits for a pool slot, `reap_dead_runs` marks every unfinished run whose
process is gone as failed (`report_run_failed`) and frees its slots (`free_concurrency_slots_for_run`), as
well as the slots still held by runs that already finished. Runs started elsewhere (the UI, the daemon)
carry no tags: their process is known from the pids of their own events when the instance's storage is
local (SQLite). The packaged instance (`templates/dagster.yaml`) also turns on Dagster's run monitoring,
so a daemon frees the slots of finished runs by itself.

Waiting is said: `RunWaits` follows a run's "blocked by limit for pool" events and prints what the step
waits on (who holds the slots) and for how long; `wait_for_corpus_lock` does the same before a run while
another process holds the corpus's write lock. `run_interruptibly` runs the materialisation in a worker
thread so that SIGINT and SIGTERM always reach the command: the run is marked canceled, its slots are
freed, and the process ends (Dagster's in-process executor swallows both signals while it waits).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage

from memory_core.processes import ProcessIdentity, pid_alive, process_start_time
from memory_core.store.db import CorpusStore

HOST_TAG = "memory_os/host"
PID_TAG = "memory_os/pid"
PID_STARTED_TAG = "memory_os/pid_started"
PARTITION_TAG = "dagster/partition"
REPORT_EVERY_S = 10.0  # how often a wait says it is still waiting

_UNFINISHED = (dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING)
_FINISHED = (dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED)
_PID_EVENTS = {DagsterEventType.RUN_START, DagsterEventType.ENGINE_EVENT, DagsterEventType.STEP_START}

T = TypeVar("T")


def process_tags() -> dict[str, str]:
    """Run tags naming the process that executes an in-process run."""
    me = ProcessIdentity.current()
    tags = {HOST_TAG: me.host, PID_TAG: str(me.pid)}
    if me.started is not None:
        tags[PID_STARTED_TAG] = f"{me.started:.2f}"
    return tags


def _tagged_process(run: dg.DagsterRun) -> ProcessIdentity | None:
    tags = run.tags
    if PID_TAG not in tags:
        return None
    return ProcessIdentity.from_dict(
        {"host": tags.get(HOST_TAG, ""), "pid": tags[PID_TAG], "started": tags.get(PID_STARTED_TAG)}
    )


def _local_storage(instance: dg.DagsterInstance) -> bool:
    return isinstance(instance.run_storage, SqliteRunStorage)  # the packaged instance's kept-open one too


def run_alive(instance: dg.DagsterInstance, record: dg.RunRecord) -> bool | None:
    """Whether a run's process still exists: True / False, or None when it cannot be told from here."""
    run = record.dagster_run
    tagged = _tagged_process(run)
    if tagged is not None:
        return tagged.alive()
    if not _local_storage(instance):
        return None
    pids = {
        r.event_log_entry.dagster_event.pid
        for r in instance.get_records_for_run(run.run_id, of_type=_PID_EVENTS, limit=200).records
        if r.event_log_entry.dagster_event is not None and r.event_log_entry.dagster_event.pid
    }
    if not pids:
        return None
    started = (record.start_time or record.create_timestamp.timestamp()) + 1.0
    for pid in pids:
        began = process_start_time(pid)
        # a process started after the run is a later one that reuses the pid
        if pid_alive(pid) and (began is None or began <= started):
            return True
    return False


@dataclass(frozen=True)
class ReapedRun:
    """A run whose process was gone (marked failed) or that had finished, and the pool slots it held."""

    run_id: str
    corpus: str
    status: str  # its status when found
    slots: dict[str, int] = field(default_factory=dict)  # pool → slots freed

    def describe(self) -> str:
        return f"{self.run_id[:8]} ({self.corpus or 'no partition'}, {self.status.lower()})"


def _claimed_slots(instance: dg.DagsterInstance) -> dict[str, dict[str, int]]:
    """run id → pool → claimed slots (plus runs with steps pending in a pool, with 0)."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return {}
    held: dict[str, dict[str, int]] = {}
    infos = storage.get_concurrency_infos(sorted(storage.get_concurrency_keys()))
    for pool, info in infos.items():
        for slot in info.claimed_slots:
            pools = held.setdefault(slot.run_id, {})
            pools[pool] = pools.get(pool, 0) + 1
        for step in info.pending_steps:
            held.setdefault(step.run_id, {}).setdefault(pool, 0)
    return held


def reap_dead_runs(instance: dg.DagsterInstance, exclude: tuple[str, ...] = ()) -> list[ReapedRun]:
    """Mark failed every unfinished run whose process is gone, and free the pool slots of those runs and of
    runs that already finished. Runs in `exclude` (the caller's own) are left alone."""
    held = _claimed_slots(instance)
    candidates = {
        r.dagster_run.run_id: r
        for r in instance.get_run_records(filters=dg.RunsFilter(statuses=list(_UNFINISHED)))
    }
    if held:
        for r in instance.get_run_records(filters=dg.RunsFilter(run_ids=list(held))):
            candidates.setdefault(r.dagster_run.run_id, r)
    reaped: list[ReapedRun] = []
    for run_id, record in candidates.items():
        if run_id in exclude:
            continue
        run = record.dagster_run
        if run.status in _FINISHED:
            if run_id not in held:
                continue
        elif run.status in _UNFINISHED:
            if run_alive(instance, record) is not False:
                continue
            message = "memory-os: the process running this run is gone (killed or crashed); marked failed"
            if run.status == dg.DagsterRunStatus.CANCELING:
                instance.report_run_canceled(run, message)
            else:
                instance.report_run_failed(run, message)
        else:
            continue  # queued / not started: holds nothing
        instance.event_log_storage.free_concurrency_slots_for_run(run_id)
        reaped.append(
            ReapedRun(run_id, run.tags.get(PARTITION_TAG, ""), run.status.value, held.get(run_id, {}))
        )
    return reaped


def describe_reaped(reaped: list[ReapedRun]) -> str:
    """One line: which runs were marked failed and which slots were freed."""
    dead = [r for r in reaped if r.status not in {s.value for s in _FINISHED}]
    slots: dict[str, int] = {}
    for r in reaped:
        for pool, n in r.slots.items():
            slots[pool] = slots.get(pool, 0) + n
    freed = ", ".join(f"{n} {pool} slot{'s' if n != 1 else ''}" for pool, n in sorted(slots.items()) if n)
    parts = []
    if dead:
        parts.append(
            f"marked {len(dead)} run{'s' if len(dead) != 1 else ''} whose process is gone as failed "
            f"({', '.join(r.describe() for r in dead)})"
        )
    finished = [r for r in reaped if r not in dead]
    if finished:
        parts.append(f"released {len(finished)} finished run{'s' if len(finished) != 1 else ''}")
    return "  ↺ run health: " + "; ".join(parts) + (f"; freed {freed}" if freed else "")


# ------------------------------------------------------------------------------------------ waits
def pool_holders(instance: dg.DagsterInstance, pool: str) -> str:
    """Who holds the slots of `pool`: "2 of 2 slots held by runs 1a2b3c4d (notes, pid 4242), ..."."""
    info = instance.event_log_storage.get_concurrency_info(pool)
    runs: dict[str, str] = {}
    for slot in info.claimed_slots:
        if slot.run_id in runs:
            continue
        record = instance.get_run_record_by_id(slot.run_id)
        what = [slot.run_id[:8]]
        if record is not None:
            run = record.dagster_run
            what.append(run.tags.get(PARTITION_TAG, "") or run.job_name)
            if PID_TAG in run.tags:
                what.append(f"pid {run.tags[PID_TAG]}")
            what.append(run.status.value.lower())
        runs[slot.run_id] = f"{what[0]} ({', '.join(what[1:])})" if len(what) > 1 else what[0]
    limit = info.limit if info.limit is not None else "?"
    return f"{len(info.claimed_slots)} of {limit} slots held by " + (", ".join(runs.values()) or "nobody")


class RunWaits:
    """Follows one run's steps: a step waiting for a pool slot says on what and for how long, and dead
    runs are reaped meanwhile (a slot held by a run killed after this one started is freed as soon as it is
    seen); a step running while another process holds the corpus's write lock says so."""

    def __init__(self, instance: dg.DagsterInstance, say: Callable[[str], None], store: CorpusStore):
        self.instance = instance
        self.say = say
        self.store = store
        self.run_id: str | None = None
        self.waiting: dict[str, tuple[str, float, float]] = {}  # step → (pool, since, last said)
        self.running: dict[str, float] = {}  # step → since
        self.lock_said = 0.0

    def on_event(self, entry) -> None:
        event = entry.dagster_event
        if event is None or not event.step_key:
            return
        kind, step = event.event_type_value, event.step_key
        if kind == "ENGINE_EVENT" and "blocked by limit for pool" in (entry.message or ""):
            # "Step blocked by limit for pool llm" / "Step still blocked by limit for pool llm"
            pool = (entry.message or "").rsplit(" ", 1)[-1]
            self.waiting.setdefault(step, (pool, time.monotonic(), 0.0))
        elif kind == "STEP_START":
            self.running[step] = time.monotonic()
        if kind in ("STEP_START", "STEP_FAILURE") and step in self.waiting:
            pool, since, said = self.waiting.pop(step)
            if said:
                self.say(f"  … {step} got a slot in pool {pool} after {time.monotonic() - since:.0f}s")
        if kind in ("STEP_SUCCESS", "STEP_FAILURE"):
            self.running.pop(step, None)

    def tick(self) -> None:
        now = time.monotonic()
        for step, (pool, since, said) in list(self.waiting.items()):
            if said and now - said < REPORT_EVERY_S:
                continue
            reaped = reap_dead_runs(self.instance, exclude=(self.run_id,) if self.run_id else ())
            if reaped:
                self.say(describe_reaped(reaped))
            self.say(
                f"  … {step} waiting for a slot in pool {pool}: {pool_holders(self.instance, pool)} "
                f"({now - since:.0f}s)"
            )
            self.waiting[step] = (pool, since, now)
        long_running = [s for s, since in self.running.items() if now - since >= REPORT_EVERY_S]
        if long_running and now - self.lock_said >= REPORT_EVERY_S:
            self.lock_said = now
            holder = self.store.lock_holder()
            if holder is not None and holder != ProcessIdentity.current():
                step = long_running[0]
                self.say(
                    f"  … {step} running {now - self.running[step]:.0f}s while corpus {self.store.name}'s "
                    f"write lock is {_held_by(holder)} (another process): it waits for it"
                )


def wait_for_corpus_lock(store: CorpusStore, say: Callable[[str], None], poll_s: float = 0.5) -> float:
    """Wait while another process holds the corpus's write lock, saying by whom and for how long; returns
    the seconds waited."""
    started = time.monotonic()
    said = 0.0
    while True:
        holder = store.lock_holder()
        now = time.monotonic()
        if holder is None or holder == ProcessIdentity.current():
            if said:
                say(f"  … corpus {store.name}'s write lock is free after {now - started:.0f}s")
            return now - started
        if not said or now - said >= REPORT_EVERY_S:
            say(
                f"  … waiting for corpus {store.name}'s write lock, {_held_by(holder)} ({now - started:.0f}s)"
            )
            said = now
        time.sleep(poll_s)


def _held_by(holder: ProcessIdentity) -> str:
    return f"held by pid {holder.pid} on {holder.host}"


# ------------------------------------------------------------------------------------------ signals
def run_interruptibly(target: Callable[[], T], on_signal: Callable[[int], None]) -> T:
    """`target()` in a worker thread while the main thread handles SIGINT and SIGTERM: on either,
    `on_signal(signum)` (mark the run canceled, free its slots, say so) and the process ends with
    128 + signum; a second signal ends it at once. Off the main thread, `target()` runs as is."""
    if threading.current_thread() is not threading.main_thread():
        return target()
    box: dict[str, object] = {}
    received: list[int] = []

    def work() -> None:
        try:
            box["result"] = target()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    def handler(signum, _frame) -> None:
        if received:
            os._exit(128 + signum)
        received.append(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        worker = threading.Thread(target=work, name="memory-os-run", daemon=True)
        worker.start()
        while worker.is_alive():
            worker.join(0.2)
            if received:
                try:
                    on_signal(received[0])
                finally:
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(128 + received[0])
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def cancel_run(instance: dg.DagsterInstance, run_id: str | None, signum: int, stream: TextIO | None) -> None:
    """After a signal: the run is canceled in the instance and its slots are free for the next one."""
    name = signal.Signals(signum).name
    if run_id is None:
        _say(stream, f"interrupted by {name} before the run started")
        return
    held = _claimed_slots(instance).get(run_id, {})
    run = instance.get_run_by_id(run_id)
    if run is not None and run.status in _UNFINISHED:
        instance.report_run_canceled(run, f"memory-os: interrupted by {name}")
    instance.event_log_storage.free_concurrency_slots_for_run(run_id)
    freed = sum(held.values())
    _say(stream, f"interrupted by {name}: run {run_id[:8]} marked canceled, {freed} pool slot(s) freed")


def _say(stream: TextIO | None, line: str) -> None:
    print(line, file=stream or sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ the daemon's side
@dg.sensor(
    name="dead_run_reaper",
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Every minute while the daemon runs: runs whose process is gone are marked failed and their "
    "pool slots freed, so queued runs start without waiting for the next `memory-os materialize`.",
)
def dead_run_reaper(context: dg.SensorEvaluationContext) -> dg.SkipReason:
    """Idempotent: only runs whose process is known to be gone are touched, so evaluating it (also as the
    UI's tick preview) never changes a live run."""
    reaped = reap_dead_runs(context.instance)
    return dg.SkipReason(describe_reaped(reaped) if reaped else "no dead runs")

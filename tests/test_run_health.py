"""Run health: a run killed with SIGKILL never hangs the instance, waits say on what, signals end a run.

The scenario tests run the real command line in subprocesses against one Dagster home (the packaged
dagster.yaml: `llm` pool of 2 slots) with extraction answered by a local chat server that is slowed down
while the runs are killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from memory_assets.run_health import PID_TAG, process_tags, reap_dead_runs, run_alive
from memory_core.demo import demo_export_path
from memory_core.processes import ProcessIdentity, pid_alive
from tests.chat_server import Reply

ROOT = Path(__file__).resolve().parents[1]
SELECT = "messages,segments,mentions,user_reactions"  # through extraction: no embedding model to load


def test_a_killed_process_is_told_from_a_live_one_and_from_a_reused_pid():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        me = ProcessIdentity.current()
        assert me.alive() is True and me.local
        born = ProcessIdentity.current().__class__(me.host, child.pid, None)
        assert born.alive() is True
        child.kill()
        child.wait()
        assert not pid_alive(child.pid) and born.alive() is False
    finally:
        if child.poll() is None:
            child.kill()
    if me.started is not None:  # same pid, another start time: a later process reusing the pid
        assert ProcessIdentity(me.host, me.pid, me.started - 3600).alive() is False
    assert ProcessIdentity("some-other-host", me.pid, me.started).alive() is None


def test_reap_marks_runs_of_dead_processes_failed_and_frees_their_slots(instance):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tags = {**process_tags(), PID_TAG: str(dead.pid), "dagster/partition": "notes"}
    tags.pop("memory_os/pid_started", None)
    job = dg.GraphDefinition("g", node_defs=[]).to_job()
    killed = instance.create_run_for_job(job, tags=tags, status=dg.DagsterRunStatus.STARTED)
    live = instance.create_run_for_job(job, tags=process_tags(), status=dg.DagsterRunStatus.STARTED)
    storage = instance.event_log_storage
    storage.set_concurrency_slots("llm", 2)
    assert storage.claim_concurrency_slot("llm", killed.run_id, "extraction").is_claimed
    assert storage.claim_concurrency_slot("llm", live.run_id, "extraction").is_claimed
    assert run_alive(instance, instance.get_run_record_by_id(killed.run_id)) is False
    assert run_alive(instance, instance.get_run_record_by_id(live.run_id)) is True

    reaped = reap_dead_runs(instance)
    assert [(r.run_id, r.corpus, r.slots) for r in reaped] == [(killed.run_id, "notes", {"llm": 1})]
    assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(live.run_id).status == dg.DagsterRunStatus.STARTED
    holders = {s.run_id for s in storage.get_concurrency_info("llm").claimed_slots}
    assert holders == {live.run_id}
    assert reap_dead_runs(instance) == []  # nothing left to do


def test_the_daemons_reaper_sensor_frees_a_dead_runs_slots_for_a_queued_run(instance):
    """The daemon's side (`dead_run_reaper`, on by default): a dead STARTED run is failed and its slot freed
    without any `memory-os` command, so the next run of the same corpus waiting for it gets it; a tick with
    nothing dead changes nothing."""
    from memory_assets.run_health import dead_run_reaper

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tags = {**process_tags(), PID_TAG: str(dead.pid), "dagster/partition": "notes"}
    tags.pop("memory_os/pid_started", None)
    job = dg.GraphDefinition("g", node_defs=[]).to_job()
    killed = instance.create_run_for_job(job, tags=tags, status=dg.DagsterRunStatus.STARTED)
    waiting = instance.create_run_for_job(
        job, tags={**process_tags(), "dagster/partition": "notes"}, status=dg.DagsterRunStatus.STARTED
    )
    storage = instance.event_log_storage
    storage.set_concurrency_slots("llm", 1)
    assert storage.claim_concurrency_slot("llm", killed.run_id, "extraction").is_claimed
    assert not storage.claim_concurrency_slot("llm", waiting.run_id, "extraction").is_claimed

    tick = dead_run_reaper(dg.build_sensor_context(instance=instance))
    assert killed.run_id[:8] in tick.skip_message and "notes" in tick.skip_message
    assert instance.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id(waiting.run_id).status == dg.DagsterRunStatus.STARTED  # alive: untouched
    assert storage.claim_concurrency_slot("llm", waiting.run_id, "extraction").is_claimed
    assert dead_run_reaper(dg.build_sensor_context(instance=instance)).skip_message == "no dead runs"


# ------------------------------------------------------------------------------------------ scenarios
class Cli:
    """The command line in subprocesses, on one memory home and one Dagster home."""

    def __init__(self, home, server_url: str, pool_limit: int = 2):
        # the `home` fixture's memory home and DAGSTER_HOME (set in this process too)
        self.home, self.dagster_home = home.root, Path(os.environ["DAGSTER_HOME"])
        from memory_assets.instance import template

        yaml = template("dagster.yaml").read_text(encoding="utf-8")
        (self.dagster_home / "dagster.yaml").write_text(
            yaml.replace("default_limit: 2", f"default_limit: {pool_limit}"), encoding="utf-8"
        )
        base = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        self.env = dict(
            base, MEMORY_OS_HOME=str(self.home), DAGSTER_HOME=str(self.dagster_home), PYTHONPATH=str(ROOT)
        )
        self.llm_env = dict(self.env, OPENAI_API_KEY="sk-test-run-health-key", OPENAI_BASE_URL=server_url)
        self.started: list[subprocess.Popen] = []

    def kill_all(self) -> None:
        """No process of a test outlives it, whatever failed."""
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()

    def start(self, *args: str, llm: bool = False) -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memory_cli.main", *args],
            env=self.llm_env if llm else self.env,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.started.append(proc)
        return proc

    def run(self, *args: str, llm: bool = False, timeout: float = 240) -> tuple[int, str]:
        proc = self.start(*args, llm=llm)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            pytest.fail(f"`memory-os {' '.join(args)}` hung for {timeout}s:\n{out}")
        return proc.returncode, out

    def instance(self) -> dg.DagsterInstance:
        return dg.DagsterInstance.from_config(str(self.dagster_home))

    def wait_for_slots(self, n: int, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        with self.instance() as inst:
            while time.monotonic() < deadline:
                if len(inst.event_log_storage.get_concurrency_info("llm").claimed_slots) >= n:
                    return
                time.sleep(0.3)
        pytest.fail(f"{n} llm slots were never claimed")


@pytest.fixture
def cli_for(home, chat_server):
    made: list[Cli] = []

    def make(pool_limit: int = 2) -> Cli:
        made.append(Cli(home, chat_server.url, pool_limit))
        return made[-1]

    yield make
    for cli in made:
        cli.kill_all()


def _register(cli: Cli, *names: str) -> None:
    for name in names:
        code, out = cli.run("corpus", "add", name, str(demo_export_path()))
        assert code == 0, out


def test_kill_9_during_llm_extraction_never_hangs_the_next_runs(cli_for, chat_server):
    """Two runs killed with SIGKILL while their extraction holds both `llm` slots (the issue's scenario):
    the next run of another corpus and of a killed corpus both complete, and say what was freed."""
    slow = {"on": True}
    chat_server.rules.append((lambda req: slow["on"], lambda req: Reply(delay_s=300)))
    cli = cli_for()
    _register(cli, "a", "b", "c")
    killed = [cli.start("materialize", name, "--select", SELECT, llm=True) for name in ("a", "b")]
    cli.wait_for_slots(2)
    for proc in killed:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    slow["on"] = False

    code, out = cli.run("materialize", "c", "--select", SELECT)  # another corpus, offline teacher
    assert code == 0, out
    assert "marked 2 runs whose process is gone as failed" in out and "freed 2 llm slots" in out
    code, out = cli.run("materialize", "a", "--select", SELECT, llm=True)  # a killed corpus, LLM fast again
    assert code == 0, out
    assert "✓ extraction" in out and "run health" not in out  # nothing left to free
    with cli.instance() as inst:
        statuses = sorted(r.status.value for r in inst.get_runs())
        assert statuses == ["FAILURE", "FAILURE", "SUCCESS", "SUCCESS"]
        assert inst.event_log_storage.get_concurrency_info("llm").claimed_slots == []


def test_a_wait_for_a_slot_is_said_and_sigint_sigterm_end_the_command(cli_for, chat_server):
    chat_server.rules.append((lambda req: True, lambda req: Reply(delay_s=300)))
    cli = cli_for(pool_limit=1)
    _register(cli, "a", "b")
    holder = cli.start("materialize", "a", "--select", SELECT, llm=True)
    cli.wait_for_slots(1)
    waiter = cli.start("materialize", "b", "--select", SELECT)
    lines: list[str] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not any("waiting for a slot in pool llm" in x for x in lines):
        lines.append(waiter.stdout.readline())
    assert any("extraction waiting for a slot in pool llm: 1 of 1 slots held by" in x for x in lines), lines
    waiter.send_signal(signal.SIGINT)
    out, _ = waiter.communicate(timeout=30)
    assert waiter.returncode == 128 + signal.SIGINT
    assert "interrupted by SIGINT: run" in out and "marked canceled" in out

    holder.send_signal(signal.SIGTERM)
    out, _ = holder.communicate(timeout=30)
    assert holder.returncode == 128 + signal.SIGTERM
    assert "interrupted by SIGTERM" in out and "1 pool slot(s) freed" in out
    with cli.instance() as inst:
        assert sorted(r.status.value for r in inst.get_runs()) == ["CANCELED", "CANCELED"]
        assert inst.event_log_storage.get_concurrency_info("llm").claimed_slots == []


def test_a_wait_for_the_corpus_lock_is_said(home):
    from memory_assets.run_health import wait_for_corpus_lock

    store = home.corpus("notes")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from memory_core.store.db import MemoryHome; "
            "s = MemoryHome.resolve(sys.argv[1]).corpus('notes')\n"
            "with s.write_lock():\n    print('locked', flush=True); time.sleep(2.5)",
            str(home.root),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        said: list[str] = []
        waited = wait_for_corpus_lock(store, said.append, poll_s=0.1)
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait()
    assert 1.0 < waited < 10
    assert said[0].startswith(f"  … waiting for corpus notes's write lock, held by pid {holder.pid} on ")
    assert "write lock is free after" in said[-1]
    assert store.lock_holder() is None


def test_a_failed_error_check_fails_the_command_with_one_line(home, chat_server, monkeypatch):
    """The teacher proposes reactions outside the vocabulary: the ERROR-severity reaction check fails while
    the Dagster run succeeds; `memory-os materialize` exits 1 naming the check."""
    import json

    from click.testing import CliRunner

    from memory_cli.main import cli

    bogus = json.dumps(
        {
            "concepts": [],
            "reactions": [
                {
                    "reaction": {
                        "state": "Hangry",
                        "state_raw": "",
                        "intensity": 0.5,
                        "valence": "negative",
                        "epistemic_status": "explicit",
                        "evidence_message_id": "m1",
                    },
                    "cue": "hungry",
                }
            ],
        }
    )
    chat_server.rules.append((lambda req: True, lambda req: Reply(content=bogus)))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-run-health-key")
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    runner = CliRunner()
    assert (
        runner.invoke(
            cli, ["--home", str(home.root), "corpus", "add", "d", str(demo_export_path())]
        ).exit_code
        == 0
    )
    out = runner.invoke(cli, ["--home", str(home.root), "materialize", "d", "--select", SELECT])
    assert out.exit_code == 1, out.output
    assert "failed: ERROR check(s) reaction_schema_validity on user_reactions" in out.output
    assert "done in" not in out.output


def test_a_step_running_while_another_process_holds_the_corpus_lock_says_so(home, instance, monkeypatch):
    """Replay a real run's STEP_START into `RunWaits` while another process holds the corpus's lock."""
    import memory_assets.run_health as run_health
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora

    runner = CorpusRunner(home, instance)
    runner.register(plan_corpora("notes", demo_export_path()))
    run = runner.materialize("notes", ["messages"])
    start = next(
        r.event_log_entry
        for r in instance.get_records_for_run(run.run_id).records
        if r.event_log_entry.dagster_event
        and r.event_log_entry.dagster_event.event_type_value == "STEP_START"
    )
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from memory_core.store.db import MemoryHome; "
            "s = MemoryHome.resolve(sys.argv[1]).corpus('notes')\n"
            "with s.write_lock():\n    print('locked', flush=True); time.sleep(30)",
            str(home.root),
        ],
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        monkeypatch.setattr(run_health, "REPORT_EVERY_S", 0.0)
        said: list[str] = []
        waits = run_health.RunWaits(instance, said.append, home.corpus("notes"))
        waits.on_event(start)
        waits.tick()
        assert said == [
            f"  … messages running 0s while corpus notes's write lock is held by pid {holder.pid} on "
            f"{ProcessIdentity.current().host} (another process): it waits for it"
        ]
    finally:
        holder.kill()
        holder.wait()


def test_an_untagged_run_is_judged_by_the_pids_of_its_events(home):
    """A run launched elsewhere (the UI, the daemon) carries no process tags: the pids of its own events
    tell. Here a plain Dagster job whose op holds an `llm` slot, its worker killed with SIGKILL."""
    from memory_assets.instance import template

    dagster_home = Path(os.environ["DAGSTER_HOME"])
    (dagster_home / "dagster.yaml").write_text(template("dagster.yaml").read_text(encoding="utf-8"))
    script = (
        "import sys, time, dagster as dg\n"
        "@dg.op(pool='llm')\n"
        "def slow(context):\n"
        "    print('holding', flush=True); time.sleep(120)\n"
        "@dg.job\n"
        "def ui_job():\n"
        "    slow()\n"
        "ui_job.execute_in_process(instance=dg.DagsterInstance.from_config(sys.argv[1]), tags={'dagster/partition': 'ui'})\n"
    )
    worker = subprocess.Popen(
        [sys.executable, "-c", script, str(dagster_home)], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert worker.stdout.readline().strip() == "holding"
    finally:
        worker.kill()
        worker.wait()
    with dg.DagsterInstance.from_config(str(dagster_home)) as inst:
        (record,) = inst.get_run_records()
        assert (
            record.dagster_run.status == dg.DagsterRunStatus.STARTED
            and PID_TAG not in record.dagster_run.tags
        )
        assert run_alive(inst, record) is False
        run_id = record.dagster_run.run_id
        assert [(r.run_id, r.corpus, r.slots) for r in reap_dead_runs(inst)] == [(run_id, "ui", {"llm": 1})]
        assert inst.get_run_by_id(run_id).status == dg.DagsterRunStatus.FAILURE
        assert inst.event_log_storage.get_concurrency_info("llm").claimed_slots == []


def test_quiet_silences_step_lines_but_never_what_run_health_freed(home, tmp_path):
    """`materialize --quiet`: no step lines, yet a dead run's freed slots are still said in one line."""
    from click.testing import CliRunner

    from memory_assets.instance import memory_instance
    from memory_cli.main import cli

    inst = memory_instance(home)  # the instance the command opens
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    tags = {**process_tags(), PID_TAG: str(dead.pid), "dagster/partition": "other"}
    tags.pop("memory_os/pid_started", None)
    killed = inst.create_run_for_job(
        dg.GraphDefinition("g", node_defs=[]).to_job(), tags=tags, status=dg.DagsterRunStatus.STARTED
    )
    base = ["--home", str(home.root)]
    assert CliRunner().invoke(cli, [*base, "corpus", "add", "q", str(demo_export_path())]).exit_code == 0
    out = CliRunner().invoke(cli, [*base, "materialize", "q", "--select", "messages", "--quiet"])
    assert out.exit_code == 0, out.output
    assert "run health" in out.output and killed.run_id[:8] in out.output, out.output
    assert "✓" not in out.output  # no step lines
    assert inst.get_run_by_id(killed.run_id).status == dg.DagsterRunStatus.FAILURE

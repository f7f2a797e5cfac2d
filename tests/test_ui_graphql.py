"""The Dagster UI against the real webserver (`memory-os ui`), through the GraphQL the UI itself calls: UI
runs execute in process, CLI runs are re-executable there, checks executed without a partition fan out, a
partition that is no corpus fails with one clear line and the registry sensor removes it, and the inbox
sensor's preview writes nothing."""

from __future__ import annotations

import time

import pytest

from tests.conftest import write_json
from tests.dagster_ui import ADD_PARTITION, PARTITIONS, SENSOR_PREVIEW, DagsterUI, tag
from tests.samples import longmemeval_record

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ui(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ui")
    server = DagsterUI(tmp)
    data = write_json(tmp / "lme.json", [longmemeval_record("q1")])
    added = server.cli("corpus", "add", "lme", str(data))
    assert added.returncode == 0, added.stderr
    built = server.cli("materialize", "lme")  # before the UI starts: a CLI run in the same instance
    assert built.returncode == 0, built.stderr
    server.start()
    yield server
    server.stop()


def test_cli_runs_are_build_corpus_runs_the_ui_can_reexecute(ui):
    cli_runs = [r for r in ui.runs("build_corpus") if tag(r, "memory_os/runner_invocation")]
    assert cli_runs and cli_runs[0]["jobName"] == "build_corpus"
    again = ui.reexecute(cli_runs[0]["runId"])
    assert again["__typename"] == "LaunchRunSuccess", again
    run = ui.wait(again["run"]["runId"])
    assert run["status"] == "SUCCESS" and tag(run, "dagster/partition") == "lme"


def test_a_build_launched_in_the_ui_runs_every_step_in_one_process(ui):
    run = ui.wait(ui.launch("build_corpus", "lme"))
    assert run["status"] == "SUCCESS"
    engine = [e["message"] for e in ui.events(run["runId"]) if e["__typename"] == "EngineEvent"]
    assert any("Executing steps in process" in m for m in engine), engine  # not a process per step


def test_checks_executed_without_a_partition_fan_out_per_corpus(ui):
    # checks run in their asset's step (Dagster: "requires materialization"): executing them selects the
    # asset and all of its checks
    checks = [("messages", n) for n in ("no_null_timestamps", "no_dangling_parents", "input_accounting")]
    parent = ui.wait(ui.launch("__ASSET_JOB", checks=checks, assets=["messages"]))
    assert parent["status"] == "CANCELED"
    children = [
        r for r in ui.runs() if tag(r, "dagster/partition") == "lme" and r["runId"] != parent["runId"]
    ]
    child = ui.wait(children[0]["runId"])  # the newest run of the corpus
    assert child["status"] == "SUCCESS"
    assert any(
        "fanned out to one run per corpus (1: lme → " in e["message"] for e in ui.events(parent["runId"])
    )


def test_a_partition_that_is_no_corpus_fails_with_one_clear_line(ui):
    assert ui.gql(ADD_PARTITION, {"key": "ghost"})["data"]["addDynamicPartition"]["__typename"] == (
        "AddDynamicPartitionSuccess"
    )
    run = ui.wait(ui.launch("build_corpus", "ghost"))
    assert run["status"] == "FAILURE"
    failures = [e for e in ui.events(run["runId"]) if e["__typename"] == "ExecutionStepFailureEvent"]
    assert [f["stepKey"] for f in failures] == ["messages"]
    message = failures[0]["error"]["message"] if failures[0]["error"] else failures[0]["message"]
    assert "corpus 'ghost' is not registered" in message and "memory-os corpus add ghost FILE" in message


def test_the_daemon_removes_a_partition_that_is_no_corpus_and_keeps_the_corpora(ui):
    assert ui.gql(ADD_PARTITION, {"key": "stray"})["data"]["addDynamicPartition"]["__typename"] == (
        "AddDynamicPartitionSuccess"
    )
    deadline = time.monotonic() + 120  # the registry sensor ticks every 30 s (on by default)
    keys = ["stray"]
    while "stray" in keys and time.monotonic() < deadline:
        time.sleep(2)
        keys = ui.gql(PARTITIONS)["data"]["assetNodeOrError"]["partitionKeys"]
    assert "stray" not in keys and "lme" in keys, keys


def test_the_sensor_preview_registers_nothing(ui):
    inbox = ui.home / "inbox"
    inbox.mkdir(exist_ok=True)
    write_json(inbox / "dropped.json", [longmemeval_record("q9")])
    answer = ui.gql(SENSOR_PREVIEW)["data"]["sensorDryRun"]
    assert [r["runKey"].split(":")[0] for r in answer["evaluationResult"]["runRequests"]] == ["dropped"]
    listed = ui.cli("corpus", "list")
    assert listed.returncode == 0 and "dropped" not in listed.stdout

"""The real Dagster webserver (`memory-os ui`) in a temporary home, and the few GraphQL calls the UI makes."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCATION = {"repositoryLocationName": "memory_os", "repositoryName": "__repository__"}

LAUNCH = """mutation($p: ExecutionParams!) { launchRun(executionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
REEXECUTE = """mutation($p: ReexecutionParams!) { launchRunReexecution(reexecutionParams: $p) { __typename
  ... on LaunchRunSuccess { run { runId } } ... on PythonError { message } } }"""
RUN = """query($id: ID!) { runOrError(runId: $id) { ... on Run { runId status jobName startTime endTime
  tags { key value } } } }"""
RUNS = """query($job: String) { runsOrError(filter: {pipelineName: $job}, limit: 50) { ... on Runs { results {
  runId status jobName tags { key value } } } } }"""
EVENTS = """query($id: ID!) { logsForRun(runId: $id) { ... on EventConnection { events { __typename
  ... on MessageEvent { message } ... on ExecutionStepFailureEvent { stepKey error { message } } } } } }"""
ADD_PARTITION = """mutation($key: String!) { addDynamicPartition(repositorySelector: {repositoryLocationName:
  "memory_os", repositoryName: "__repository__"}, partitionsDefName: "corpus", partitionKey: $key) {
  __typename } }"""
PARTITIONS = """{ assetNodeOrError(assetKey: {path: ["messages"]}) { ... on AssetNode { partitionKeys } } }"""
SENSOR_PREVIEW = """mutation { sensorDryRun(selectorData: {repositoryLocationName: "memory_os", repositoryName:
  "__repository__", sensorName: "inbox_sensor"}, cursor: null) { __typename
  ... on DryRunInstigationTick { evaluationResult { runRequests { runKey } error { message } } } } }"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DagsterUI:
    def __init__(self, tmp: Path):
        self.home, self.dagster_home, self.port = tmp / "home", tmp / "dagster", free_port()
        self.env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "MEMORY_OS_HOME": str(self.home),
            "DAGSTER_HOME": str(self.dagster_home),
        }
        self.proc: subprocess.Popen | None = None

    def start(self) -> DagsterUI:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_cli.main", "ui", "--port", str(self.port)],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # the webserver, daemon and code server stop together
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                if self.gql("{ version }").get("data"):
                    return self
            except OSError:
                pass
            time.sleep(1)
        self.stop()
        raise RuntimeError("the Dagster UI did not start")

    def stop(self) -> None:
        if self.proc is None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "memory_cli.main", *args], env=self.env, capture_output=True, text=True
        )

    def gql(self, query: str, variables: dict | None = None) -> dict:
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/graphql", body, {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=120) as response:
            return json.loads(response.read())

    def launch(
        self,
        job: str,
        partition: str | None = None,
        checks: list[tuple[str, str]] | None = None,
        assets: list[str] | None = None,
    ) -> str:
        selector = {**LOCATION, "jobName": job}
        if checks is not None:  # checks run in their asset's step: the UI selects the asset with them
            selector["assetSelection"] = [{"path": [a]} for a in assets or []]
            selector["assetCheckSelection"] = [{"assetKey": {"path": [a]}, "name": n} for a, n in checks]
        tags = [{"key": "dagster/partition", "value": partition}] if partition else []
        params = {"selector": selector, "mode": "default", "executionMetadata": {"tags": tags}}
        answer = self.gql(LAUNCH, {"p": params})["data"]["launchRun"]
        assert answer["__typename"] == "LaunchRunSuccess", answer
        return answer["run"]["runId"]

    def reexecute(self, run_id: str) -> dict:
        params = {"parentRunId": run_id, "strategy": "ALL_STEPS"}
        return self.gql(REEXECUTE, {"p": params})["data"]["launchRunReexecution"]

    def run(self, run_id: str) -> dict:
        return self.gql(RUN, {"id": run_id})["data"]["runOrError"]

    def wait(self, run_id: str, timeout_s: float = 600) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            run = self.run(run_id)
            if run and run["status"] in ("SUCCESS", "FAILURE", "CANCELED"):
                return run
            time.sleep(1)
        raise TimeoutError(run_id)

    def runs(self, job: str | None = None) -> list[dict]:
        return self.gql(RUNS, {"job": job})["data"]["runsOrError"]["results"]

    def events(self, run_id: str) -> list[dict]:
        return self.gql(EVENTS, {"id": run_id})["data"]["logsForRun"]["events"]


def tag(run: dict, key: str) -> str | None:
    return next((t["value"] for t in run["tags"] if t["key"] == key), None)

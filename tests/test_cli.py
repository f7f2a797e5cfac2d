"""The `memory-os` command line: register, build, inspect; clear errors and exit codes on bad input."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from memory_cli.main import cli
from tests.conftest import write_json
from tests.samples import longmemeval_record


def run(home, *args):
    return CliRunner().invoke(cli, ["--home", str(home.root), *args], catch_exceptions=False)


def test_corpus_add_materialize_stats(home, tmp_path):
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1"), longmemeval_record("q2")])
    out = run(home, "corpus", "add", "lme", str(path))
    assert out.exit_code == 0, out.output
    assert "lme__q1" in out.output and "lme__q2" in out.output  # one corpus per question
    listed = run(home, "corpus", "list", "--json")
    assert [r["name"] for r in json.loads(listed.output)] == ["lme__q1", "lme__q2"]
    built = run(home, "materialize", "lme__q2", "--select", "messages,segments")
    assert built.exit_code == 0, built.output
    assert "✓ messages" in built.output and "✓ segments" in built.output  # the runner's progress lines
    stats = json.loads(run(home, "stats", "lme__q2", "--json").output)
    assert (
        stats["messages"] == 4 and stats["null_timestamps"] == 0 and stats["messages_without_source_ref"] == 0
    )
    assert stats["tables"]["staging"]["segments"] == 2


def test_bad_file_is_one_clear_error(home, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"nope": 1}', encoding="utf-8")
    out = CliRunner().invoke(cli, ["--home", str(home.root), "corpus", "add", "x", str(bad)])
    assert out.exit_code == 2
    assert "cannot tell the format" in out.output and str(bad) in out.output
    out = CliRunner().invoke(cli, ["--home", str(home.root), "materialize", "never-added"])
    assert out.exit_code == 2 and "not registered" in out.output
    good = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    assert run(home, "corpus", "add", "lme", str(good), "--question-id", "q1").exit_code == 0
    out = CliRunner().invoke(cli, ["--home", str(home.root), "materialize", "lme", "--select", "mesages"])
    assert out.exit_code == 2 and "unknown asset or stage name(s): mesages" in out.output


@pytest.mark.slow
def test_demo_builds_every_stage_and_ends_with_a_cited_answer(home):
    """The README's first command, as a user runs it (local sentence model, offline teacher)."""
    out = run(home, "demo")
    assert out.exit_code == 0, out.output
    assert "Q: When is my half marathon?" in out.output
    assert "Evidence (5 of 5):" in out.output and "[Source:" in out.output  # readable, not the XML
    assert "<direct_evidence>" not in out.output
    assert "April 21" in out.output  # the moved race date is among the evidence
    assert "(citations valid)" in out.output and "INVALID" not in out.output


# ------------------------------------------------------------------------------------------------ packaging
ROOT = Path(__file__).resolve().parents[1]


def test_the_instance_template_is_packaged_and_seeds_a_new_dagster_home(tmp_path, monkeypatch):
    from memory_assets.instance import INSTANCE_TEMPLATE, ensure_dagster_home, template
    from memory_core.store.db import MemoryHome

    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    path = ensure_dagster_home(MemoryHome.resolve(tmp_path / "home"))
    assert path == tmp_path / "home" / "dagster" and os.environ["DAGSTER_HOME"] == str(path)
    seeded = (path / "dagster.yaml").read_text(encoding="utf-8")
    assert seeded == template(INSTANCE_TEMPLATE).read_text(encoding="utf-8")
    assert "telemetry:\n  enabled: false" in seeded and "applyLimitPerUniqueValue: true" in seeded
    (path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    ensure_dagster_home(MemoryHome.resolve(tmp_path / "home"))  # an existing instance config is kept
    assert (path / "dagster.yaml").read_text(encoding="utf-8") == "telemetry:\n  enabled: false\n"


def test_the_repository_workspace_and_instance_are_the_packaged_ones():
    """`dagster dev -w workspace.yaml` in the repository (DAGSTER_HOME the repository: its `dagster.yaml`) and
    `memory-os ui` load the same code location on the same instance settings."""
    from memory_assets.instance import INSTANCE_TEMPLATE, WORKSPACE_TEMPLATE, template

    packaged = template(WORKSPACE_TEMPLATE).read_text(encoding="utf-8")
    assert (ROOT / "workspace.yaml").read_text(encoding="utf-8") == packaged
    assert "module_name: memory_assets.definitions" in packaged
    instance = template(INSTANCE_TEMPLATE).read_text(encoding="utf-8")
    assert (ROOT / "dagster.yaml").read_text(encoding="utf-8") == instance
    assert "enabled: false" in instance  # telemetry off


@pytest.mark.slow
def test_the_wheel_ships_the_templates_and_data(tmp_path):
    """What a non-editable `pip install .` gets: built from a copy of the tree."""
    import shutil

    ignore = shutil.ignore_patterns(".venv", ".git", "__pycache__", "build", "*.egg-info", ".*cache", "runs")
    shutil.copytree(ROOT, tmp_path / "src", ignore=ignore, symlinks=True)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            "dist",
            "./src",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("memory_os-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {
        "memory_assets/templates/dagster.yaml",
        "memory_assets/templates/workspace.yaml",
        "memory_assets/runner.py",
        "memory_cli/__init__.py",
        "memory_core/demo/conversations.json",
        "evals/gold/extraction_gold.json",
        "evals/gold/extraction_gold_holdout.json",
        "evals/benchmarks/bench_query.py",
    } <= names


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_ui_serves_the_packaged_workspace_with_this_pythons_dagster(tmp_path):
    """From a folder outside the repository, with no `dagster` on PATH."""
    port = _free_port()
    env = {
        **os.environ,
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "MEMORY_OS_HOME": str(tmp_path / "home"),
        "DAGSTER_HOME": str(tmp_path / "dagster"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "memory_cli.main", "ui", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,  # dagster dev starts a webserver and a code server: stop them together
    )
    try:
        info, deadline = None, time.monotonic() + 300
        while info is None and time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=5) as r:
                    info = json.loads(r.read())
            except OSError:
                time.sleep(1)
        assert info is not None, proc.stderr.read().decode()[-3000:] if proc.poll() is not None else "timeout"
        assert "dagster_webserver_version" in info
        assert (tmp_path / "dagster" / "dagster.yaml").exists()
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

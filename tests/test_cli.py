"""The `memory-os` command line: register, build, inspect; clear errors and exit codes on bad input."""

from __future__ import annotations

import json

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


@pytest.mark.slow
def test_demo_builds_every_stage_and_ends_with_a_cited_answer(home):
    """The README's first command, as a user runs it (local sentence model, offline teacher)."""
    out = run(home, "demo")
    assert out.exit_code == 0, out.output
    assert "Q: When is my half marathon?" in out.output
    assert "<direct_evidence>" in out.output and "[Source:" in out.output
    assert "April 21" in out.output  # the moved race date is among the evidence
    assert "(citations valid)" in out.output and "INVALID" not in out.output

"""Progress inside long stages: rate and estimate lines from core, through the asset's logger, to the CLI."""

from __future__ import annotations

from click.testing import CliRunner

from memory_cli.main import cli
from memory_core import progress as progress_module
from memory_core.progress import Progress, progress_to
from tests.conftest import write_json
from tests.samples import longmemeval_record


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_says_rate_and_estimate_at_most_every_few_seconds():
    lines: list[str] = []
    clock = Clock()
    with progress_to(lines.append):
        progress = Progress("topics", "tuning trials run", 25, every_s=5.0, clock=clock)
    for _ in range(10):  # 10 trials in 4 s: nothing said yet
        clock.now += 0.4
        progress.step()
    assert lines == []
    clock.now += 1.0  # 11 trials in 5 s
    progress.step()
    assert lines == ["progress topics: 11/25 tuning trials run (2.2/s, ~6s left)"]
    clock.now += 100.0
    progress.step(14)
    progress.finish()
    assert lines[-1] == "progress topics: 25/25 tuning trials run (0.2/s)"
    assert len(lines) == 3


def test_without_a_sink_progress_says_nothing():
    quiet = Progress("extraction", "conversations extracted", 3, every_s=0.0)
    quiet.step(3)
    quiet.finish()
    assert quiet.log is None and quiet.said == 0


def test_the_cli_prints_progress_inside_a_stage(home, tmp_path, monkeypatch):
    monkeypatch.setattr(progress_module, "DEFAULT_EVERY_S", 0.0)  # every step says where it is
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    runner = CliRunner()
    assert runner.invoke(cli, ["--home", str(home.root), "corpus", "add", "lme", str(path)]).exit_code == 0
    out = runner.invoke(
        cli, ["--home", str(home.root), "materialize", "lme", "--select", "ingestion,extraction"]
    )
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    said = [line for line in lines if line.startswith("    … extraction: ")]
    assert said and said[-1].startswith("    … extraction: 2/2 conversations extracted (")
    finished = next(i for i, line in enumerate(lines) if line.startswith("  ✓ extraction ("))
    assert lines.index(said[-1]) < finished  # said while the stage ran, before its ✓

"""The user's first hour at the command line (issue 17): one-line errors with exit 2 for bad input, at
`corpus add` and at build time; selections by stage name; honest status; a readable `query`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from memory_cli.main import cli
from tests.conftest import write_json
from tests.samples import chatgpt_conversation, longmemeval_record


def run(home, *args):
    return CliRunner().invoke(cli, ["--home", str(home.root), *args])


def error_lines(out) -> list[str]:
    return [line for line in out.output.splitlines() if line.startswith("error:")]


def truncated_export(tmp_path):
    whole = json.dumps([chatgpt_conversation("c1"), chatgpt_conversation("c2", "Other")])
    path = tmp_path / "truncated.json"
    path.write_text(whole[: len(whole) // 2], encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "fmt", "expected"),
    [
        (None, "chatgpt", "truncated JSON"),  # the truncated export (with and without --format)
        (None, None, "truncated JSON"),
        ("a,b\n1,2\n3,4\n", "jsonl", "all 3 record(s) are dead letters (malformed_json ×3)"),
        ("[1, 2, 3]", "chatgpt", "all 3 record(s) are dead letters (bad_shape ×3)"),
    ],
)
def test_corpus_add_reads_the_file_through_and_refuses_it_in_one_line(home, tmp_path, content, fmt, expected):
    if content is None:
        path = truncated_export(tmp_path)
    else:
        path = tmp_path / "input.txt"
        path.write_text(content, encoding="utf-8")
    out = run(home, "corpus", "add", "t", str(path), *(["--format", fmt] if fmt else []))
    assert out.exit_code == 2, out.output
    assert len(out.output.strip().splitlines()) == 1 and expected in out.output and str(path) in out.output
    assert home.registration("t") is None  # nothing registered


def test_an_input_error_at_build_time_is_the_same_line_and_exit_2(home, tmp_path):
    path = write_json(tmp_path / "export.json", [chatgpt_conversation("c1")])
    assert run(home, "corpus", "add", "t", str(path)).exit_code == 0
    truncated = truncated_export(tmp_path).read_text(encoding="utf-8")
    path.write_text(truncated, encoding="utf-8")  # the file changed after registration
    at_add = run(home, "corpus", "add", "u", str(path), "--format", "chatgpt")
    out = run(home, "materialize", "t")
    assert out.exit_code == 2, out.output
    assert error_lines(out) == error_lines(at_add) and len(error_lines(out)) == 1
    assert "Traceback" not in out.output and "dagster" not in out.output.lower()
    assert len(out.output.splitlines()) <= 3  # "materialising t", "✗ messages: …", "error: …"


def test_a_file_with_nothing_ingestible_fails_the_build_naming_the_reasons(home, tmp_path):
    path = write_json(tmp_path / "export.json", [chatgpt_conversation("c1")])
    assert run(home, "corpus", "add", "t", str(path)).exit_code == 0
    path.write_text("[1, 2, 3]", encoding="utf-8")
    out = run(home, "materialize", "t", "--select", "messages")
    assert out.exit_code == 2, out.output
    assert "nothing ingestible as chatgpt" in out.output and "bad_shape ×3" in out.output
    stats = json.loads(run(home, "stats", "t", "--json").output)
    assert stats["messages"] == 0 and stats["dead_letters"] == 0  # nothing of the refused file was written


def test_select_takes_stage_names_expands_multi_assets_and_lists_known_names(home, tmp_path):
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    assert run(home, "corpus", "add", "lme", str(path)).exit_code == 0
    out = run(home, "materialize", "lme", "--select", "ingestion")  # a stage group
    assert out.exit_code == 0, out.output
    assert "✓ messages" in out.output and "✓ segments" in out.output
    out = run(home, "materialize", "lme", "--select", "mentions")  # one key of the extraction multi-asset
    assert out.exit_code == 0, out.output
    assert "✓ extraction" in out.output and "(mentions, user_reactions)" in out.output
    out = run(home, "materialize", "lme", "--select", "bogus")
    assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1
    assert "unknown asset or stage name(s): bogus; known:" in out.output
    assert "extraction" in out.output and "mentions" in out.output and "ingestion" in out.output


def test_one_status_per_check(home, tmp_path):
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    assert run(home, "corpus", "add", "lme", str(path)).exit_code == 0
    out = run(home, "materialize", "lme", "--select", "messages")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    checks = [line for line in lines if "no_null_timestamps" in line]
    assert checks == ["    ✓ check no_null_timestamps on messages"]
    # the checks run in their asset's step: said under it, after its own line
    step = next(i for i, line in enumerate(lines) if line.startswith("  ✓ messages ("))
    assert lines.index(checks[0]) > step


def test_registration_refuses_a_silent_repoint_and_remove_of_an_unknown_name_fails(home, tmp_path):
    first = write_json(tmp_path / "a.json", [chatgpt_conversation("c1")])
    second = write_json(tmp_path / "b.json", [chatgpt_conversation("c2", "Other")])
    assert run(home, "corpus", "add", "t", str(first)).exit_code == 0
    assert run(home, "corpus", "add", "t", str(first)).exit_code == 0  # the same input again is fine
    out = run(home, "corpus", "add", "t", str(second))
    assert out.exit_code == 2 and "already registered" in out.output and "--replace" in out.output
    assert home.registration("t")["path"] == str(first)
    assert run(home, "materialize", "t", "--select", "messages").exit_code == 0
    out = run(home, "corpus", "add", "t", str(second), "--replace")
    assert out.exit_code == 0 and "replaced" in out.output
    assert home.registration("t")["path"] == str(second) and not home.corpus("t").exists()
    assert run(home, "materialize", "t", "--select", "messages").exit_code == 0
    stats = json.loads(run(home, "stats", "t", "--json").output)
    assert stats["conversations"] == 1  # the new export alone, not merged with the old one
    out = run(home, "corpus", "remove", "nosuch")
    assert out.exit_code == 2 and "'nosuch' is not registered" in out.output


def test_query_errors_are_one_line_and_a_never_built_corpus_is_said_so(home, tmp_path):
    path = write_json(tmp_path / "a.json", [chatgpt_conversation("c1")])
    assert run(home, "corpus", "add", "t", str(path)).exit_code == 0
    out = run(home, "query", "t", "Where?")
    assert out.exit_code == 2 and "registered but not built yet" in out.output
    assert not home.corpus("t").dir.exists()  # and nothing was created for it
    for bad in ("last tuesday", "2024-13-01"):
        out = run(home, "query", "t", "Where?", "--as-of", bad)
        assert out.exit_code == 2 and len(out.output.strip().splitlines()) == 1
        assert f"--as-of {bad!r} is not a date: use YYYY-MM-DD" in out.output


def test_query_prints_a_readable_cited_answer_bounded_by_k_and_xml_on_request(built_demo):
    home, name = built_demo
    out = run(home, "query", name, "When is my half marathon?", "-k", "3")
    assert out.exit_code == 0, out.output
    assert "<direct_evidence>" not in out.output and "[Source:" in out.output
    assert "Evidence (3 of 3):" in out.output
    listed = [line for line in out.output.splitlines() if line.startswith("  ") and "[Concept:" in line]
    assert 0 < len(listed) <= 3
    assert len(out.output.splitlines()) < 20
    xml = run(home, "query", name, "When is my half marathon?", "-k", "3", "--xml")
    assert xml.exit_code == 0 and "<direct_evidence>" in xml.output and "Evidence (" not in xml.output


def test_gardener_apply_is_a_dry_run_unless_apply(home, tmp_path):
    from memory_core.gardener import content_hash
    from tests.gardener_samples import build_gardener_corpus

    store = home.corpus("garden")
    build_gardener_corpus(store, tmp_path)
    home.register("garden", "jsonl", str(write_json(tmp_path / "unused.json", [])))
    assert run(home, "gardener", "triage", "garden", "--quiet").exit_code == 0
    state0 = content_hash(store)
    out = run(home, "gardener", "apply", "garden", "--quiet")
    assert out.exit_code == 0, out.output
    assert "DRY RUN, nothing written" in out.output and content_hash(store) == state0
    out = run(home, "gardener", "apply", "garden", "--apply", "--quiet")
    assert out.exit_code == 0, out.output
    assert "applied" in out.output and "undo with" in out.output and content_hash(store) != state0


def test_every_job_runs_in_process_and_cli_runs_belong_to_the_packaged_code_location():
    import dagster as dg
    import yaml

    from memory_assets.definitions import defs
    from memory_assets.instance import WORKSPACE_TEMPLATE, template
    from memory_assets.runner import CODE_LOCATION

    jobs = defs.resolve_all_job_defs()  # the named jobs and the implicit asset job the UI launches
    assert {j.name for j in jobs} >= {"build_corpus", "gardener_apply", "__ASSET_JOB"}
    assert all(j.executor_def.name == dg.in_process_executor.name for j in jobs)
    workspace = yaml.safe_load(template(WORKSPACE_TEMPLATE).read_text(encoding="utf-8"))
    assert workspace["load_from"][0]["python_module"]["location_name"] == CODE_LOCATION
    instance = yaml.safe_load(template("dagster.yaml").read_text(encoding="utf-8"))
    assert instance["run_coordinator"]["class"] == "CorpusRunCoordinator"
    assert defs.resolve_schedule_def("gardener_nightly").default_status == dg.DefaultScheduleStatus.STOPPED


def test_an_unknown_corpus_name_lists_the_registered_ones_and_the_closest(home, tmp_path):
    out = run(home, "query", "demo", "anything")
    assert out.exit_code == 2 and error_lines(out) == [
        f"error: corpus 'demo' is not registered under {home.root}, and no corpus is yet: `memory-os demo` "
        "builds the demo, `memory-os corpus add NAME FILE` registers your own"
    ]
    path = write_json(tmp_path / "a.json", [chatgpt_conversation("c1")])
    for name in ("demo", "notes", "lme__q1", "lme__q2"):
        assert run(home, "corpus", "add", name, str(path)).exit_code == 0
    for args, name in [
        (("query", "dmeo", "x"), "dmeo"),
        (("stats", "Demo"), "Demo"),
        (("materialize", "dem"), "dem"),
    ]:
        out = run(home, *args)
        assert out.exit_code == 2 and error_lines(out) == [
            f"error: corpus {name!r} is not registered under {home.root}. Did you mean 'demo'? "
            "Registered: demo, lme__q1, lme__q2, notes."
        ], args
        assert "materialising" not in out.output  # nothing starts for a name that is not there
    out = run(home, "stats", "lme")  # a split benchmark's prefix names its records
    assert "Did you mean 'lme__q1' or 'lme__q2'?" in out.output
    out = run(home, "stats", "zzz")
    assert out.exit_code == 2 and "Did you mean" not in out.output and "Registered: demo" in out.output


def test_an_mcp_server_for_an_unknown_corpus_says_so_in_one_line(home, tmp_path):
    from memory_core.errors import CorpusNotFoundError
    from memory_query.mcp_server import MemoryServer

    path = write_json(tmp_path / "a.json", [chatgpt_conversation("c1")])
    assert run(home, "corpus", "add", "notes", str(path)).exit_code == 0
    with pytest.raises(CorpusNotFoundError, match="Did you mean 'notes'"):
        MemoryServer(home, ["note"])
    out = run(home, "serve-mcp", "--corpus", "note")
    assert out.exit_code == 2 and error_lines(out)[0].startswith("error: corpus 'note' is not registered")
    server = MemoryServer(home, ["notes"])
    with pytest.raises(Exception, match="unknown corpus 'note'. Did you mean 'notes'"):
        server.scope("note")

"""Read paths never create stores: a query or `stats` on a name that is not built reads an empty memory and
leaves no folder or database behind; a reader opened before the build sees the built one."""

from __future__ import annotations

from memory_core.corpora import plan_corpora, register
from memory_core.ingest.loader import ingest_file
from memory_core.store.stats import corpus_stats
from memory_query import ReaderPool, query_memory
from tests.conftest import write_jsonl
from tests.samples import jsonl_rows


def _files(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_query_and_stats_on_a_name_not_built_create_nothing(home, tmp_path):
    home.root.mkdir(parents=True, exist_ok=True)
    before = _files(home.root)
    answer = query_memory("When is my flight?", "nosuch", home=home)  # not even registered
    assert answer.items == [] and not home.corpus("nosuch").dir.exists()
    path = write_jsonl(tmp_path / "m.jsonl", jsonl_rows())
    register(home, plan_corpora("later", path))
    registered = _files(home.root)
    stats = corpus_stats(home.corpus("later"))  # registered, never built
    assert stats["messages"] == 0 and stats["tables"]["staging"]["segments"] == 0
    assert query_memory("flight", "later", home=home).items == []
    assert _files(home.root) == registered and not (home.root / "corpora").exists()
    # the registration itself, nothing per corpus
    assert {f.split("-")[0] for f in set(registered) - set(before)} == {"registry.db"}


def test_a_reader_opened_before_the_build_reads_the_built_store(home, tmp_path):
    with ReaderPool(home) as pool:
        assert query_memory("flight May 3", "notes", home=home, pool=pool).items == []
        assert not home.corpus("notes").dir.exists()
        ingest_file(home.corpus("notes"), write_jsonl(tmp_path / "n.jsonl", jsonl_rows()), "jsonl")
        items = query_memory("flight May 3", "notes", home=home, pool=pool).items
    assert items and items[0].source_ref == "m1"


def test_read_commands_on_a_registered_name_not_built_create_no_corpus_folder(home, tmp_path):
    from click.testing import CliRunner

    from memory_cli.main import cli

    register(home, plan_corpora("later", write_jsonl(tmp_path / "m.jsonl", jsonl_rows())))
    base = ["--home", str(home.root)]
    for args in (
        ["gardener", "proposals", "later", "--json"],
        ["gardener", "actions", "later", "--json"],
        ["repairs", "list", "later", "--json"],
        ["reactions", "residue", "later", "--json"],
        ["stats", "later", "--json"],
    ):
        out = CliRunner().invoke(cli, base + args, obj={})
        assert out.exit_code == 0, (args, out.output)
        assert not home.corpus("later").dir.exists(), args

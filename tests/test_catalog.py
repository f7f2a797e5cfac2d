"""The asset catalog (issue 17): code versions, content-hash data versions (an unchanged rebuild marks nothing
stale), `dagster/row_count`, column schemas, source references, timings under one prefix, a few curated
quality figures as the only other plotted numbers."""

from __future__ import annotations

import dagster as dg
from dagster._core.definitions.data_version import StaleStatus
from dagster._utils.test.data_versions import get_stale_status_resolver

from memory_assets.catalog import QUALITY_FIGURES, CodeVersions, module_source
from memory_assets.common import report_figures
from memory_assets.definitions import defs
from memory_assets.runner import CorpusRunner
from memory_core.corpora import plan_corpora
from memory_resources.embeddings import EmbeddingsResource
from tests.conftest import write_json
from tests.samples import longmemeval_record

HASHING = EmbeddingsResource(provider="hashing", hashing_dim=256)


def _versions(instance, keys, partition):
    out = {}
    for key in keys:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=key, asset_partitions=[partition]), limit=1
        ).records
        event = records[0].asset_materialization
        out[key.to_user_string()] = (event.tags or {}).get("dagster/data_version"), event.metadata
    return out


def test_an_unchanged_rebuild_keeps_every_data_version_and_marks_nothing_stale(home, instance, tmp_path):
    runner = CorpusRunner(home, instance, resources={"embeddings": HASHING})
    runner.register(plan_corpora("lme", write_json(tmp_path / "lme.json", [longmemeval_record("q1")])))
    assert runner.materialize("lme").success
    keys = sorted(defs.resolve_asset_graph().get_all_asset_keys(), key=lambda k: k.to_user_string())
    first = _versions(instance, keys, "lme")
    assert all(version for version, _ in first.values()), first
    assert first["messages"][1]["dagster/row_count"].value == 4
    assert first["segments"][1]["dagster/row_count"].value == 2
    assert any(k.startswith("timing/") for k in first["topics"][1]) and "seconds" not in first["topics"][1]
    assert runner.materialize("lme").success
    second = _versions(instance, keys, "lme")
    assert {k: v for k, (v, _) in second.items()} == {k: v for k, (v, _) in first.items()}
    resolver = get_stale_status_resolver(instance, list(defs.resolve_asset_graph().assets_defs))
    assert {k.to_user_string(): resolver.get_status(k, "lme") for k in keys} == {
        k.to_user_string(): StaleStatus.FRESH for k in keys
    }


PLOTTED = ("quality/", "timing/", "dagster/")


def test_every_asset_plots_only_its_quality_figures_timings_and_row_count(home, instance, tmp_path):
    runner = CorpusRunner(home, instance, resources={"embeddings": HASHING})
    runner.register(plan_corpora("lme", write_json(tmp_path / "lme.json", [longmemeval_record("q1")])))
    assert runner.materialize("lme").success
    keys = sorted(defs.resolve_asset_graph().get_all_asset_keys(), key=lambda k: k.to_user_string())
    for key, (_, metadata) in _versions(instance, keys, "lme").items():
        numbers = [
            k for k, v in metadata.items() if isinstance(v, (dg.IntMetadataValue, dg.FloatMetadataValue))
        ]
        assert numbers and all(k.startswith(PLOTTED) for k in numbers), (key, numbers)
        # every curated figure is there (a renamed report figure fails here), under quality/
        assert {f"quality/{f}" for f in QUALITY_FIGURES[key]} <= set(metadata), (key, sorted(metadata))
        # the other numbers stay visible, in one JSON entry
        others = metadata.get("figures")
        assert others is None or all(isinstance(v, (int, float)) for v in others.value.values()), key
    mentions = _versions(instance, [dg.AssetKey("mentions")], "lme")["mentions"][1]
    assert mentions["figures"].value["mentions_written"] == 2
    assert report_figures(mentions)["span_verified_rate"] == mentions["quality/span_verified_rate"].value


def test_a_changed_input_changes_the_versions_downstream(home, instance, tmp_path):
    path = write_json(tmp_path / "lme.json", [longmemeval_record("q1")])
    runner = CorpusRunner(home, instance, resources={"embeddings": HASHING})
    runner.register(plan_corpora("lme", path))
    assert runner.materialize("lme", ["messages", "segments"]).success
    key = [dg.AssetKey("messages"), dg.AssetKey("segments")]
    before = _versions(instance, key, "lme")
    record = longmemeval_record("q1")
    record["haystack_sessions"][0][0]["content"] = "Hi there, a changed first turn"
    write_json(path, [record])
    assert runner.materialize("lme", ["messages", "segments"]).success
    after = _versions(instance, key, "lme")
    assert before["messages"][0] != after["messages"][0] and before["segments"][0] != after["segments"][0]


def test_the_catalog_declares_code_versions_columns_and_source_references():
    graph = defs.resolve_asset_graph()
    messages = graph.get(dg.AssetKey("messages"))
    schema = messages.metadata["dagster/column_schema"]
    columns = {c.name for c in getattr(schema, "schema", schema).columns}
    assert {"message_id", "conversation_id", "text", "created_at"} <= columns
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.code_version and "dagster/code_references" in node.metadata, key


def _assets_def(key: str) -> dg.AssetsDefinition:
    return defs.resolve_asset_graph().get(dg.AssetKey(key)).assets_def


def test_a_change_inside_memory_core_changes_the_code_version_of_the_assets_that_import_it():
    changed = "memory_core.topics.clustering"  # imported by the topics stage, not by ingestion
    topics, messages = _assets_def("topics"), _assets_def("messages")
    versions = CodeVersions()
    assert changed in versions.closure(topics.op.compute_fn.decorated_fn.__module__)
    assert changed not in versions.closure(messages.op.compute_fn.decorated_fn.__module__)
    assert defs.resolve_asset_graph().get(dg.AssetKey("topics")).code_version == versions.of_asset(topics)

    def edited(name: str) -> str | None:  # the real source, with one line added to the changed module
        source = module_source(name)
        return f"{source}\nEDITED = True\n" if name == changed else source

    after = CodeVersions(edited)
    assert after.of_asset(topics) != versions.of_asset(topics)
    assert after.of_asset(messages) == versions.of_asset(messages)
    assert after.of_asset(_assets_def("weighted_links")) != versions.of_asset(_assets_def("weighted_links"))


def test_the_import_walk_reads_lazy_relative_and_parenthesised_imports():
    versions = CodeVersions(
        {
            "memory_core.fake": "import os\n'''\nfrom the docs import nothing\n'''\n"
            "def f():\n    from memory_core.fake_lazy import (\n        a,\n        b,\n    )\n",
            "memory_core.fake_lazy": "from . import fake_rel\nfrom memory_core import x, \\\n    fake_cont\n",
            "memory_core.fake_cont": "",
            "memory_core.fake_rel": "x = 1\n",
            "memory_core": "",
        }.get
    )
    assert versions.closure("memory_core.fake") == [
        "memory_core",
        "memory_core.fake",
        "memory_core.fake_cont",
        "memory_core.fake_lazy",
        "memory_core.fake_rel",
    ]

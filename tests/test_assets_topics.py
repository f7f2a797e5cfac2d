"""Layer 3: materialise the topic layer (topics → weighted_links → domains) of a corpus partition built from the
shipped demo export, with its checks, and re-materialise it unchanged."""

from __future__ import annotations

import dagster as dg
from sqlalchemy import func, select

from memory_assets.common import report_figures
from memory_assets.definitions import default_resources, defs
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import plan_corpora, register
from memory_core.demo import demo_export_path
from memory_core.store.schema import anchor_entities, topic_concept_links, topic_segments, topics
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.storage import MemoryStorage

UPSTREAM = dg.AssetSelection.assets(
    "messages", "segments", "mentions", "user_reactions", "canonical_concepts"
)
TOPIC_LAYER = dg.AssetSelection.groups("topics")
CHECKS = {
    "topic_silhouette_in_bounds",
    "topic_noise_in_bounds",
    "segments_in_one_topic",
    "link_weights_in_range",
    "topics_in_hierarchy",
}


def _materialize(instance, home, selection, run_config=None):
    return dg.materialize(
        list(defs.assets),
        selection=selection,
        instance=instance,
        partition_key="demo",
        resources={
            **default_resources(),
            "storage": MemoryStorage(home=str(home.root)),
            "embeddings": EmbeddingsResource(provider="hashing"),
        },
        run_config=run_config,
    )


def _meta(result, node):
    return report_figures(result.asset_materializations_for_node(node)[0].metadata)


def test_materialize_topic_layer_with_checks(home, instance):
    register(home, plan_corpora("demo", demo_export_path()))
    instance.add_dynamic_partitions(corpus_partitions.name, ["demo"])
    assert _materialize(instance, home, UPSTREAM).success

    run_config = {"ops": {"topics": {"config": {"n_trials": 6, "min_points": 8}}}}
    result = _materialize(instance, home, TOPIC_LAYER, run_config)
    assert result.success
    t = _meta(result, "topics")
    assert t["status"] == "built" and t["segments"] > 8 and t["topics"] >= 1
    assert t["path"] in ("tuned", "single") and t["trials_run"] == (6 if t["path"] == "tuned" else 0)
    assert t["embedding_model"] == "hashing-256" and t["describer"] == "c-tf-idf"
    assert t["topic_map"].startswith("![topic map of demo](data:image/png;base64,")
    assert t["topic_map_path"].endswith("reports/topic_map.png")
    assert len(t["topic_map"]) < 140_000  # the inline picture stays small (base64 of a PNG under 100 kB)
    assert t["topic_map_legend"].startswith("| number | label | segments | share | domain |")
    assert "| label |" in t["topics_table"] and 0 <= t["umap_compile_share"] <= 1
    links = _meta(result, "weighted_links")
    assert (
        links["topics"] == t["topics"]
        and links["links"] > 0
        and "| topic |" in links["topics_with_top_concepts"]
    )
    d = _meta(result, "domains")
    assert d["status"] == "built" and d["domains"] >= 1 and d["anchors"] >= 1
    # the same legend once the topics have domains: every numbered topic names its domain
    rows = [
        [c.strip() for c in line.strip()[1:-1].split("|")] for line in d["topic_map_legend"].splitlines()[2:]
    ]
    numbered = [r for r in rows if r[0]]
    assert [r[0] for r in numbered] == [str(i) for i in range(1, len(numbered) + 1)] and numbered
    assert all(r[-1] != "—" for r in rows if r[1] != "noise"), rows
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == CHECKS
    for name in ("segments_in_one_topic", "link_weights_in_range", "topics_in_hierarchy"):
        assert evaluations[name].passed and evaluations[name].severity == dg.AssetCheckSeverity.ERROR, name
    assert evaluations["topic_noise_in_bounds"].severity == dg.AssetCheckSeverity.WARN

    store = home.corpus("demo")
    with store.staging.connect() as conn:
        before = [dict(r) for r in conn.execute(select(topics).order_by(topics.c.topic_id)).mappings()]
        n_links = conn.execute(select(func.count()).select_from(topic_concept_links)).scalar_one()
        n_segments = conn.execute(select(func.count()).select_from(topic_segments)).scalar_one()
        n_anchors = conn.execute(select(func.count()).select_from(anchor_entities)).scalar_one()
    assert n_segments == t["segments"] and n_links == links["links"] and n_anchors == d["anchors"]

    again = _materialize(instance, home, TOPIC_LAYER, run_config)
    assert again.success
    assert (
        _meta(again, "topics")["status"] == "unchanged" and _meta(again, "domains")["status"] == "unchanged"
    )
    assert _meta(again, "topics")["topic_map"] == t["topic_map"]  # the reused build's picture
    with store.staging.connect() as conn:
        assert [
            dict(r) for r in conn.execute(select(topics).order_by(topics.c.topic_id)).mappings()
        ] == before
        assert conn.execute(select(func.count()).select_from(topic_concept_links)).scalar_one() == n_links

    # bounds are configuration: an impossible noise bound fails the (warning) check, nothing else
    strict = _materialize(
        instance,
        home,
        dg.AssetSelection.assets("topics"),
        {
            **run_config,
            "ops": {
                **run_config["ops"],
                "topics": {
                    "config": {
                        **run_config["ops"]["topics"]["config"],
                        "quality_bounds": {"noise_ratio_min": 0.99},
                    }
                },
            },
        },
    )
    checks = {e.check_name: e for e in strict.get_asset_check_evaluations()}
    assert strict.success and not checks["topic_noise_in_bounds"].passed


def test_topics_labelled_through_the_llm_client(home, instance, tmp_path, chat_server):
    """The llm resource's client (real `openai` SDK against a local server) labels topics; a rerun reuses."""
    from memory_core.store.schema import llm_calls
    from memory_resources.llm import LLMResource
    from tests.chat_server import ok
    from tests.conftest import write_jsonl
    from tests.topic_samples import subject_rows

    def is_describe(request: dict) -> bool:
        return request.get("response_format", {}).get("json_schema", {}).get("name") == "GroupDescription"

    answer = '{"label": "A subject of its own", "profile": "Rounds about one clearly separate subject."}'
    chat_server.rules.append((is_describe, ok(answer)))
    register(home, plan_corpora("subjects", write_jsonl(tmp_path / "s.jsonl", subject_rows())))
    instance.add_dynamic_partitions(corpus_partitions.name, ["subjects"])
    llm = LLMResource(api_key="test-key", base_url=chat_server.url, backoff_base_s=0.01, timeout_s=5.0)

    def run(selection, run_config=None):
        return dg.materialize(
            list(defs.assets),
            selection=selection,
            instance=instance,
            partition_key="subjects",
            resources={
                **default_resources(),
                "storage": MemoryStorage(home=str(home.root)),
                "embeddings": EmbeddingsResource(provider="hashing"),
                "llm": llm,
            },
            run_config=run_config,
        )

    assert run(dg.AssetSelection.assets("messages", "segments")).success
    topics_config = {"ops": {"topics": {"config": {"n_trials": 6}}}}
    result = run(dg.AssetSelection.assets("topics"), topics_config)
    assert result.success
    meta = _meta(result, "topics")
    assert meta["describer"] == "llm:gpt-4o-mini" and meta["llm_calls"] == meta["topics"] == 4
    store = home.corpus("subjects")
    with store.staging.connect() as conn:
        labels = set(conn.execute(select(topics.c.label, topics.c.label_source)).all())
        calls = conn.execute(select(func.count()).where(llm_calls.c.stage == "topics")).scalar_one()
    assert labels == {("A subject of its own", "llm:gpt-4o-mini/topics/describe/v1")} and calls == 4
    assert len(chat_server.answered) == 4
    again = run(dg.AssetSelection.assets("topics"), topics_config)
    assert _meta(again, "topics")["status"] == "unchanged" and len(chat_server.requests) == 4

"""Layer 3: materialise `graph` and `indexes` of a corpus partition (the small hand-built corpus, the
hashing embedder as the `embeddings` resource), with their checks; a rerun leaves identical counts."""

from __future__ import annotations

import dagster as dg
import pytest
from sqlalchemy import select, update

from memory_assets.common import report_figures
from memory_assets.definitions import defs
from memory_assets.partitions import corpus_partitions
from memory_core.embeddings.hashing import HashingEmbedder
from memory_core.store.schema import concept_evidence, messages, segments
from memory_core.vector_index.families import open_family_index
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.graph import GraphConfigError, GraphResource
from tests.conftest import stage_resources
from tests.graph_corpus import build_small_corpus

READ_SIDE = dg.AssetSelection.assets("graph", "indexes")


def _materialize(instance, home, name, run_config=None):
    return dg.materialize(
        list(defs.assets),
        selection=READ_SIDE,
        instance=instance,
        partition_key=name,
        run_config=run_config,
        raise_on_error=False,
        resources=stage_resources(home, embeddings=EmbeddingsResource(provider="hashing", hashing_dim=64)),
    )


def test_materialize_graph_and_indexes_with_checks(home, instance, tmp_path):
    corpus = build_small_corpus(home, tmp_path, name="garden")
    instance.add_dynamic_partitions(corpus_partitions.name, ["garden"])
    result = _materialize(instance, home, "garden")
    assert result.success
    graph_meta = report_figures(result.asset_materializations_for_node("graph")[0].metadata)
    assert graph_meta["backend"] == "embedded"
    assert graph_meta["nodes_total"] == 2 + 10 + 5 + 4 + 2 + 1 + 1 + 2 + 0 + 1
    assert graph_meta["node_counts"]["UserReaction"] == 0  # reflective excluded by default
    assert graph_meta["edge_counts"]["EVIDENCE_FOR"] == 5
    assert graph_meta["dangling_references"] == {"SUPPORTS": 1}
    index_meta = report_figures(result.asset_materializations_for_node("indexes")[0].metadata)
    assert index_meta["messages_size"] == 10 and index_meta["messages_kind"] == "flat"
    store = home.corpus("garden")
    seg_index, msg_index = open_family_index(store, "segments"), open_family_index(store, "messages")
    assert msg_index.meta["source"] == "segments"
    with store.staging.connect() as conn:
        spans = {
            r.segment_id: r.message_spans
            for r in conn.execute(select(segments.c.segment_id, segments.c.message_spans))
        }
    holders: dict[str, list[str]] = {}
    for seg_id, pieces in spans.items():
        for piece in pieces:
            holders.setdefault(piece["message_id"], []).append(seg_id)
    # a turn sharing its round with other turns gets its own text's vector (a shared one cannot tell them apart)
    own = {m for m, h in holders.items() if len(h) == 1 and len({p["message_id"] for p in spans[h[0]]}) > 1}
    assert own  # in this corpus every message shares its round
    assert index_meta["embedding_model"] == "hashing-64"
    assert index_meta["embedded"] == 2 + 4 + 5 + len(own)
    with store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    for mid in own:
        own_vec = HashingEmbedder(dim=64).embed([texts[mid]])[0]
        assert float(own_vec @ msg_index.vectors([msg_index.ids.index(mid)])[0]) > 0.999
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "graph_counts_match_tables",
        "evidence_points_to_source_messages",
        "index_ids_match_sources",
        "index_finds_its_own_vectors",
    }
    assert all(e.passed for e in evaluations.values()), {
        k: e.metadata for k, e in evaluations.items() if not e.passed
    }

    again = _materialize(
        instance, home, "garden", {"ops": {"graph": {"config": {"include_reflective": True}}}}
    )
    assert again.success
    meta = report_figures(again.asset_materializations_for_node("graph")[0].metadata)
    assert meta["edge_counts"] == {**graph_meta["edge_counts"], "DURING": 1}
    assert meta["node_counts"] == {**graph_meta["node_counts"], "UserReaction": 1}
    assert report_figures(again.asset_materializations_for_node("indexes")[0].metadata)["reused"] == 21
    assert all(e.passed for e in again.get_asset_check_evaluations())

    # `segments`: no second embedding pass, every message points where its segment points
    derived = _materialize(
        instance, home, "garden", run_config={"ops": {"indexes": {"config": {"message_vectors": "segments"}}}}
    )
    assert derived.success
    assert report_figures(derived.asset_materializations_for_node("indexes")[0].metadata)["embedded"] == 0
    msg_index = open_family_index(store, "messages")
    for mid, (sid, *rest) in holders.items():
        if not rest:
            seg_vec = seg_index.vectors([seg_index.ids.index(sid)])[0]
            assert float(seg_vec @ msg_index.vectors([msg_index.ids.index(mid)])[0]) > 0.999

    # a span that no longer matches its message fails the evidence check
    with corpus.store.staging.begin() as conn:
        conn.execute(update(concept_evidence).where(concept_evidence.c.text == "Kyoto").values(text="Osaka"))
    broken = _materialize(instance, home, "garden")
    failed = {e.check_name: e for e in broken.get_asset_check_evaluations() if not e.passed}
    assert set(failed) == {"evidence_points_to_source_messages"}
    assert failed["evidence_points_to_source_messages"].metadata["wrong_spans"].value == 1


def test_graph_resource_settings(home, monkeypatch):
    store = home.corpus("garden")
    monkeypatch.delenv("NEO4J_URI", raising=False)
    with pytest.raises(GraphConfigError, match="NEO4J_URI"):
        GraphResource(backend="neo4j").store_for(store)
    monkeypatch.setenv("NEO4J_URI", "bolt://db.example:7687")
    monkeypatch.setenv("NEO4J_PASSWORD", "pw-from-env")
    neo = GraphResource(backend="neo4j").store_for(store)
    assert (
        neo.uri == "bolt://db.example:7687"
        and neo.corpus == "garden"
        and neo._auth == ("neo4j", "pw-from-env")
    )
    description = GraphResource(backend="neo4j", neo4j_password="s3cret").describe(store)
    assert "s3cret" not in str(description) and "pw-from-env" not in str(description)
    inline = GraphResource(backend="neo4j", neo4j_uri="neo4j+s://admin:inline-pw@db.example:7687").describe(
        store
    )
    assert inline["location"] == "neo4j+s://db.example:7687 db=neo4j corpus=garden"
    assert GraphResource().describe(store)["location"].endswith("corpora/garden/graph/graph.lbdb")

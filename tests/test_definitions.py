"""Layer 1: the code location loads, with every stage's assets, checks, jobs, sensors and schedules."""

from __future__ import annotations

import dagster as dg


def test_definitions_load_and_validate():
    from memory_assets.definitions import defs

    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {
        "messages",
        "segments",
        "mentions",
        "user_reactions",
        "canonical_concepts",
        "graph",
        "indexes",
        "topics",
        "weighted_links",
        "domains",
    } <= keys
    graph = defs.resolve_asset_graph()
    assert {graph.get(dg.AssetKey(k)).group_name for k in ("topics", "weighted_links", "domains")} == {
        "topics"
    }
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if not node.is_materializable:  # a dependency declared by key whose stage is not merged yet
            continue
        assert node.partitions_def is not None and node.partitions_def.name == "corpus", key
        assert "team:memory-os" in node.owners
    assert defs.resolve_job_def("build_corpus") is not None
    extraction = defs.resolve_assets_def("mentions")
    assert extraction.op.pool == "llm" and graph.get(dg.AssetKey("user_reactions")).group_name == "extraction"
    assert set(defs.resources) >= {"storage", "llm"}
    assert defs.resolve_sensor_def("inbox_sensor") is not None
    assert graph.get(dg.AssetKey("gardener_triage")).group_name == "gardener"
    assert graph.get(dg.AssetKey("gardener_actions")).group_name == "gardener"
    assert defs.resolve_job_def("gardener_triage_job") is not None
    assert defs.resolve_job_def("gardener_apply") is not None
    assert defs.resolve_schedule_def("gardener_nightly").job_name == "gardener_triage_job"


def test_domain_packages_do_not_import_dagster():
    import subprocess
    import sys

    code = (
        "import sys, memory_core.ingest.loader, memory_core.segments, memory_core.store.stats, memory_core.corpora, "
        "memory_core.ontology, memory_core.embeddings, memory_core.embeddings.cache, "
        "memory_core.embeddings.sentence_transformer, memory_core.embeddings.openai_embeddings, "
        "memory_core.memory_loop.loop, memory_core.concepts.metrics, memory_core.concepts.action_log, "
        "memory_core.memory_loop.adjudication, memory_core.memory_loop.summaries, memory_core.memory_loop.valid_time, "
        "memory_core.ontology.titles, memory_core.llm, memory_core.llm.openai_client, "
        "memory_core.extraction.stage, memory_core.extraction.offline_teacher, memory_core.extraction.scoring, "
        "memory_core.extraction.quality, memory_core.extraction.reflective, memory_core.gold, "
        "memory_core.graph, memory_core.graph.ladybug_store, memory_core.graph.neo4j_store, memory_core.vector_index, "
        "memory_core.lexical, memory_query, memory_query.mcp_server, memory_query.answer, "
        "evals.harness, evals.methods, evals.contract, evals.ci_smoke, evals.qa.run, evals.retrievers.memory, "
        "memory_core.topics.stage, memory_core.topics.links, memory_core.topics.domains, "
        "memory_core.topics.tuner, memory_core.topics.topic_map, memory_core.gardener, "
        "memory_core.gardener.refactor.llm_chooser, memory_core.gardener.triage.llm_review; "
        "assert 'dagster' not in sys.modules, 'dagster imported by domain logic'; "
        "assert not {'torch', 'sentence_transformers', 'openai', 'umap', 'hdbscan', 'optuna', 'matplotlib'} "
        "& set(sys.modules), 'heavy SDK imported eagerly'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

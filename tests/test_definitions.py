"""Layer 1: the code location loads, with every stage's assets, checks, jobs, sensors and schedules."""

from __future__ import annotations

import dagster as dg


def test_definitions_load_and_validate():
    from memory_assets.definitions import defs

    dg.Definitions.validate_loadable(defs)
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"messages", "segments"} <= keys
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        assert node.partitions_def is not None and node.partitions_def.name == "corpus", key
        assert "team:memory-os" in node.owners
    assert defs.resolve_job_def("build_corpus") is not None
    assert defs.resolve_sensor_def("inbox_sensor") is not None


def test_domain_packages_do_not_import_dagster():
    import subprocess
    import sys

    code = (
        "import sys, memory_core.ingest.loader, memory_core.segments, memory_core.store.stats, memory_core.corpora, "
        "memory_core.ontology, memory_core.embeddings, "
        "evals.harness, evals.methods, evals.contract, evals.ci_smoke, evals.qa.run, evals.retrievers.memory; "
        "assert 'dagster' not in sys.modules, 'dagster imported by domain logic'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

"""The Dagster instance on Postgres (the packaged `dagster.postgres.yaml`, dagster-postgres), live against the
`postgres` marker's server: a DAGSTER_HOME seeded from DAGSTER_PG_URL holds its runs in Postgres, and a
corpus partition materialises through it."""

from __future__ import annotations

import pytest
from sqlalchemy import make_url

pytestmark = pytest.mark.postgres


def test_the_instance_template_swaps_only_its_storage():
    from memory_assets.instance import instance_config_text

    sqlite, postgres = instance_config_text(postgres=False), instance_config_text(postgres=True)
    assert "class: KeptOpenSqliteStorage" in sqlite and "KeptOpenSqlite" not in postgres
    assert "env: DAGSTER_PG_URL" in postgres
    tail = sqlite[sqlite.index("concurrency:") :]
    assert postgres.endswith(tail)  # the run coordinator, limits and monitoring are the same


def test_a_partition_runs_on_a_postgres_dagster_instance(pg_home, monkeypatch, tmp_path):
    pytest.importorskip("dagster_postgres")
    import dagster as dg

    from memory_assets.instance import memory_instance
    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_core.demo import demo_export_path
    from memory_core.store.db import server_database
    from memory_resources.embeddings import EmbeddingsResource

    instance_db = pg_home.url_template.format(corpus="dagster", store="instance")  # dropped after the test
    assert server_database(instance_db, create=True)
    monkeypatch.setenv(
        "DAGSTER_PG_URL", make_url(instance_db).set(drivername="postgresql+psycopg2").render_as_string(False)
    )
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "pg_dagster"))
    instance = memory_instance(pg_home)
    try:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        runner = CorpusRunner(
            pg_home, instance, resources={"embeddings": EmbeddingsResource(provider="hashing")}
        )
        runner.register(plan_corpora("demo", demo_export_path()))
        run = runner.materialize("demo", selection=["messages", "segments"])
        assert run.success and run.passed
        stored = instance.get_run_by_id(run.run_id)
        assert stored.status == dg.DagsterRunStatus.SUCCESS and stored.tags["dagster/partition"] == "demo"
    finally:
        instance.dispose()

"""Layer 3: the gardener assets, jobs and nightly schedule against a test instance."""

from __future__ import annotations

from datetime import UTC, datetime

import dagster as dg
from sqlalchemy import select

from memory_assets.common import report_figures
from memory_assets.definitions import defs
from memory_assets.gardener.schedules import gardener_nightly
from memory_assets.partitions import corpus_partitions
from memory_core.gardener import content_hash, list_actions
from memory_core.store.schema import lifecycle_proposals
from memory_resources.embeddings import EmbeddingsResource
from tests.conftest import stage_resources
from tests.gardener_samples import build_gardener_corpus

HASHING = EmbeddingsResource(provider="hashing", hashing_dim=256)
SMALL_TRIAGE = {"config": {"llm_review": False}}


def _materialize(instance, home, selection, ops=None):
    return dg.materialize(
        list(defs.assets),
        selection=selection,
        instance=instance,
        partition_key="garden",
        resources=stage_resources(home, embeddings=HASHING),
        run_config={"ops": ops or {}},
        raise_on_error=False,
    )


def _checks(result) -> dict[str, tuple[bool, str]]:
    return {e.check_name: (e.passed, e.severity.value) for e in result.get_asset_check_evaluations()}


def test_triage_then_dry_run_then_apply_job(home, instance, tmp_path):
    store = home.corpus("garden")
    build_gardener_corpus(store, tmp_path)
    instance.add_dynamic_partitions(corpus_partitions.name, ["garden"])
    state0 = content_hash(store)

    triage = _materialize(
        instance, home, ["gardener_triage", "gardener_actions"], {"gardener_triage": SMALL_TRIAGE}
    )
    assert triage.success
    meta = report_figures(triage.asset_materializations_for_node("gardener_triage")[0].metadata)
    assert meta["merge_candidates"] == meta["split_candidates"] == meta["noise_candidates"] == 1
    assert meta["concepts_unchanged"] is True
    dry = report_figures(triage.asset_materializations_for_node("gardener_actions")[0].metadata)
    assert dry["dry_run"] is True and dry["actions_total"] >= 3
    assert content_hash(store) == state0  # the default Phase 1 materialisation is a dry run
    checks = _checks(triage)
    assert checks["proposals_cite_sources"] == (True, "ERROR")
    assert checks["triage_left_concepts_unchanged"] == (True, "ERROR")
    assert checks["merge_split_traceability"] == (True, "ERROR")
    assert checks["gardened_log_replays"] == (True, "ERROR")
    assert checks["anchored_rate_target"][1] == "WARN" and checks["concept_purity_target"][1] == "WARN"

    with store.staging.connect() as conn:
        merge_id = conn.execute(
            select(lifecycle_proposals.c.proposal_id).where(lifecycle_proposals.c.category == "merge")
        ).scalar_one()
    job = defs.resolve_job_def("gardener_apply")
    applied = job.execute_in_process(
        instance=instance,
        partition_key="garden",
        resources=stage_resources(home, embeddings=HASHING),
        run_config={"ops": {"gardener_actions": {"config": {"dry_run": False, "proposal_ids": [merge_id]}}}},
    )
    assert applied.success
    meta = report_figures(applied.asset_materializations_for_node("gardener_actions")[0].metadata)
    assert meta["dry_run"] is False and dict(meta["actions_by_type"]) == {"merge_concepts": 1}
    assert meta["concepts_after"] == meta["concepts_before"] - 1
    assert meta["merge_split_traceability"] == 1.0 and meta["execution_errors"] == 0
    assert content_hash(store) != state0
    assert [a["action"] for a in list_actions(store, status="applied")] == ["merge_concepts"]


def test_nightly_schedule_requests_one_triage_run_per_corpus(instance):
    context = dg.build_schedule_context(
        instance=instance, scheduled_execution_time=datetime(2024, 6, 1, 3, tzinfo=UTC)
    )
    assert isinstance(gardener_nightly(context), dg.SkipReason)
    instance.add_dynamic_partitions(corpus_partitions.name, ["alpha", "beta"])
    requests = gardener_nightly(context)
    assert [r.partition_key for r in requests] == ["alpha", "beta"]
    assert [r.run_key for r in requests] == [
        "gardener_triage:alpha:2024-06-01",
        "gardener_triage:beta:2024-06-01",
    ]
    schedule = defs.resolve_schedule_def("gardener_nightly")
    assert schedule.job_name == "gardener_triage_job" and schedule.cron_schedule == "0 3 * * *"
    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED  # ships off (issue 17)

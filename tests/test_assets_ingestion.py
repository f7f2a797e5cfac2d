"""Layer 3: materialise the ingestion assets of a corpus partition against a Dagster instance."""

from __future__ import annotations

import dataclasses
import logging

import dagster as dg
from sqlalchemy import select

from memory_assets.common import report_figures
from memory_assets.definitions import default_resources, defs
from memory_assets.ingestion import checks as ingestion_checks
from memory_assets.ingestion.sensors import corpus_registry_sensor, inbox_sensor, register_from_run_tags
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import plan_corpora, register
from memory_core.reports import CheckResult
from memory_core.store.db import MemoryHome
from memory_core.store.schema import segments
from memory_resources.storage import MemoryStorage
from tests.conftest import write_json
from tests.samples import chatgpt_conversation, locomo_sample

INGESTION = dg.AssetSelection.assets("messages", "segments")


def _materialize(instance, home, name):
    return dg.materialize(
        list(defs.assets),
        selection=INGESTION,
        instance=instance,
        partition_key=name,
        # every stage's resources must be bound even when only ingestion is selected (they build lazily)
        resources={**default_resources(), "storage": MemoryStorage(home=str(home.root))},
    )


def test_materialize_partition_with_checks(home, instance, tmp_path):
    path = write_json(
        tmp_path / "export.json", [chatgpt_conversation("c1"), chatgpt_conversation("c2", "Second")]
    )
    register(home, plan_corpora("trips", path))
    instance.add_dynamic_partitions(corpus_partitions.name, ["trips"])
    result = _materialize(instance, home, "trips")
    assert result.success
    meta = report_figures(result.asset_materializations_for_node("messages")[0].metadata)
    assert meta["records_in"] == meta["records_counted"] == 12 and meta["stored"] == 10
    assert meta["dead_lettered"] == 0 and meta["structural"] == 2  # hidden system nodes
    evaluations = result.get_asset_check_evaluations()
    assert {e.check_name for e in evaluations} == {
        "no_null_timestamps",
        "no_dangling_parents",
        "input_accounting",
        "segments_trace_to_messages",
    }
    assert all(e.passed for e in evaluations)
    with home.corpus("trips").staging.connect() as conn:
        first = [dict(r) for r in conn.execute(select(segments).order_by(segments.c.segment_id)).mappings()]
    # a second materialisation skips every unchanged conversation and keeps identical segments
    again = _materialize(instance, home, "trips")
    seg_meta = report_figures(again.asset_materializations_for_node("segments")[0].metadata)
    assert seg_meta["conversations_skipped"] == 2 and seg_meta["segments_new"] == 0
    assert report_figures(again.asset_materializations_for_node("messages")[0].metadata)["inserted"] == 0
    with home.corpus("trips").staging.connect() as conn:
        assert [
            dict(r) for r in conn.execute(select(segments).order_by(segments.c.segment_id)).mappings()
        ] == first


def _with_contract(monkeypatch, name, evaluate):
    """The messages asset's contracts with `name` evaluated by `evaluate` (the spec, blocking, stays)."""
    patched = tuple(
        dataclasses.replace(c, evaluate=evaluate) if c.name == name else c for c in ingestion_checks.MESSAGES
    )
    monkeypatch.setattr(ingestion_checks, "MESSAGES", patched)


def test_a_failed_blocking_contract_keeps_the_write_and_stops_downstream(home, instance, tmp_path, monkeypatch):
    # the contracts run in the asset's step: a blocking ERROR failure fails that step once its materialisation
    # is recorded, and the assets downstream do not run
    register(home, plan_corpora("trips", write_json(tmp_path / "e.json", [chatgpt_conversation("c1")])))
    instance.add_dynamic_partitions(corpus_partitions.name, ["trips"])
    _with_contract(monkeypatch, "input_accounting", lambda store: CheckResult(False, {"records_lost": 1}))
    failed = dg.materialize(
        list(defs.assets),
        selection=INGESTION,
        instance=instance,
        partition_key="trips",
        resources={**default_resources(), "storage": MemoryStorage(home=str(home.root))},
        raise_on_error=False,
    )
    assert not failed.success
    assert [e.asset_key.path for e in failed.get_asset_materialization_events()] == [["messages"]]
    evaluations = {e.check_name: e for e in failed.get_asset_check_evaluations()}
    assert set(evaluations) == {"no_null_timestamps", "no_dangling_parents", "input_accounting"}
    assert not evaluations["input_accounting"].passed and evaluations["no_null_timestamps"].passed
    assert evaluations["input_accounting"].metadata["records_lost"].value == 1
    assert "input_accounting" in str(failed.failure_data_for_node("messages").error.message)

    # a contract that cannot be evaluated fails with its error, the write standing as well
    def broken(store):
        raise RuntimeError("the table is locked")

    _with_contract(monkeypatch, "input_accounting", broken)
    raised = dg.materialize(
        list(defs.assets),
        selection=dg.AssetSelection.assets("messages"),
        instance=instance,
        partition_key="trips",
        resources={**default_resources(), "storage": MemoryStorage(home=str(home.root))},
        raise_on_error=False,
    )
    (evaluation,) = [e for e in raised.get_asset_check_evaluations() if e.check_name == "input_accounting"]
    assert not evaluation.passed
    assert evaluation.metadata["error"].value == "RuntimeError: the table is locked"
    assert len(raised.get_asset_materialization_events()) == 1 and not raised.success


def test_inbox_sensor_registers_dropped_files(home, instance, tmp_path):
    inbox = home.root / "inbox"
    inbox.mkdir(parents=True)
    write_json(inbox / "friends chat.json", [locomo_sample("conv-a")])
    (inbox / "broken.json").write_text("[{", encoding="utf-8")
    with dg.build_sensor_context(
        instance=instance, resources={"storage": MemoryStorage(home=str(home.root))}
    ) as ctx:
        result = inbox_sensor(ctx)
    assert isinstance(result, dg.SensorResult)
    assert [r.partition_key for r in result.run_requests] == ["friends_chat"]
    assert result.dynamic_partitions_requests[0].partition_keys == ["friends_chat"]
    assert home.registration("friends_chat") is None  # the evaluation (a UI preview too) writes nothing
    request = result.run_requests[0]
    assert request.tags["memory_os/source_format"] == "locomo"
    register_from_run_tags(home, "friends_chat", request.tags)  # what the requested run's `messages` does
    assert home.registration("friends_chat")["source_format"] == "locomo"
    assert home.registration("broken") is None
    with dg.build_sensor_context(
        instance=instance, cursor=result.cursor, resources={"storage": MemoryStorage(home=str(home.root))}
    ) as ctx:
        assert isinstance(inbox_sensor(ctx), dg.SkipReason)


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def _evaluate_registry_sensor(instance, home, log: logging.Handler | None = None):
    """One tick of the registry sensor (its log lines to `log`: the tick's log in the UI), its partition
    requests applied as the daemon applies them."""
    storage = MemoryStorage(home=str(home.root))
    with dg.build_sensor_context(instance=instance, resources={"storage": storage}) as ctx:
        if log is not None:
            ctx.log.addHandler(log)
        result = corpus_registry_sensor(ctx)
    for request in getattr(result, "dynamic_partitions_requests", None) or []:
        if isinstance(request, dg.AddDynamicPartitionsRequest):
            instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
        else:
            for key in request.partition_keys:
                instance.delete_dynamic_partition(request.partitions_def_name, key)
    return result


def test_the_registry_sensor_keeps_the_partitions_equal_to_the_registered_corpora(home, instance, tmp_path):
    register(home, plan_corpora("notes", write_json(tmp_path / "notes.json", [chatgpt_conversation()])))
    # a partition added by hand in the UI, one whose inbox run is under way (it registers its corpus itself)
    instance.add_dynamic_partitions(corpus_partitions.name, ["ghost", "dropped"])
    instance.add_run(
        dg.DagsterRun(
            job_name="build_corpus", status=dg.DagsterRunStatus.STARTED, tags={"dagster/partition": "dropped"}
        )
    )
    log = _Lines()
    assert isinstance(_evaluate_registry_sensor(instance, home, log), dg.SensorResult)
    assert sorted(instance.get_dynamic_partitions(corpus_partitions.name)) == ["dropped", "notes"]
    assert log.lines == [
        "partition 'ghost' is no registered corpus: removed (to build it, `memory-os corpus add ghost FILE`)"
    ]
    assert home.registration("ghost") is None  # the registry is only read
    # in step: nothing to do
    assert isinstance(_evaluate_registry_sensor(instance, home), dg.SkipReason)
    assert sorted(instance.get_dynamic_partitions(corpus_partitions.name)) == ["dropped", "notes"]


def test_the_registry_sensor_removes_nothing_when_it_sees_no_registry(home, instance, tmp_path):
    # a daemon looking at another (empty) memory home must not take every corpus for a stray
    instance.add_dynamic_partitions(corpus_partitions.name, ["notes", "lme"])
    other = MemoryHome.resolve(tmp_path / "elsewhere")
    assert isinstance(_evaluate_registry_sensor(instance, other), dg.SkipReason)
    assert sorted(instance.get_dynamic_partitions(corpus_partitions.name)) == ["lme", "notes"]

"""Layer 3: materialise the ingestion assets of a corpus partition against a Dagster instance."""

from __future__ import annotations

import dagster as dg
from sqlalchemy import select

from memory_assets.definitions import default_resources, defs
from memory_assets.ingestion.sensors import inbox_sensor, register_from_run_tags
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import plan_corpora, register
from memory_core.store.schema import segments
from memory_resources.storage import MemoryStorage
from tests.conftest import write_json
from tests.samples import chatgpt_conversation, locomo_sample

INGESTION = dg.AssetSelection.assets("messages", "segments")


def _materialize(instance, home, name):
    return dg.materialize(
        [*defs.assets, *defs.asset_checks],
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
    meta = result.asset_materializations_for_node("messages")[0].metadata
    assert meta["records_in"].value == meta["records_counted"].value == 12 and meta["stored"].value == 10
    assert meta["dead_lettered"].value == 0 and meta["structural"].value == 2  # hidden system nodes
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
    seg_meta = again.asset_materializations_for_node("segments")[0].metadata
    assert seg_meta["conversations_skipped"].value == 2 and seg_meta["segments_new"].value == 0
    assert again.asset_materializations_for_node("messages")[0].metadata["inserted"].value == 0
    with home.corpus("trips").staging.connect() as conn:
        assert [
            dict(r) for r in conn.execute(select(segments).order_by(segments.c.segment_id)).mappings()
        ] == first


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

"""The reflective data in Dagster's own storage: materialisations of `user_reactions` whose metadata names
a person's states. Dagster keeps metadata forever (no retention, no purge), so the asset names no state
any more (`states_seen` is a count); a purge rewrites what runs of earlier versions stored (`by_state`)
without it, in each copy Dagster keeps: the run's event log, the cross-run index of asset events and the
asset's latest-materialisation record.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.events import DagsterEventType
from dagster._core.storage.event_log.schema import AssetKeyTable, SqlEventLogStorageTable
from dagster._serdes import deserialize_value, serialize_value

USER_REACTIONS = dg.AssetKey("user_reactions")
NAMING_KEYS = ("by_state",)  # metadata entries that name states


def _names_states(entry) -> bool:
    event = entry.dagster_event
    if event is None or event.event_type_value != DagsterEventType.ASSET_MATERIALIZATION.value:
        return False
    materialization = event.step_materialization_data.materialization
    return materialization.asset_key == USER_REACTIONS and any(
        k in materialization.metadata for k in NAMING_KEYS
    )


def _redacted(entry):
    event = entry.dagster_event
    data = event.step_materialization_data
    kept = {k: v for k, v in data.materialization.metadata.items() if k not in NAMING_KEYS}
    materialization = data.materialization.with_metadata(kept)
    return entry._replace(
        dagster_event=event._replace(event_specific_data=data._replace(materialization=materialization))
    )


def _copies(instance: dg.DagsterInstance, corpus: str) -> list[tuple[str, int, object]]:
    """Every stored copy of a state-naming materialisation of the corpus's partition: (where, storage id,
    entry); where is "run" (the run's event log) or "index" (the cross-run asset index, SQLite only)."""
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=USER_REACTIONS, asset_partitions=[corpus]), limit=10_000
    ).records
    storage = instance.event_log_storage
    sharded = storage.is_run_sharded
    copies = []
    for record in records:
        if not _names_states(record.event_log_entry):
            continue
        copies.append(("index" if sharded else "run", record.storage_id, record.event_log_entry))
        if sharded:  # SQLite keeps the run's own copy under the run's own ids
            for own in storage.get_records_for_run(
                record.run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
            ).records:
                entry = own.event_log_entry
                if _names_states(entry) and entry.dagster_event.partition == corpus:
                    copies.append(("run", own.storage_id, entry))
    return copies


def stored_state_names(instance: dg.DagsterInstance, corpus: str) -> int:
    """How many stored copies of the corpus's `user_reactions` metadata still name states."""
    return len(_copies(instance, corpus))


def redact_state_names(instance: dg.DagsterInstance, corpus: str) -> int:
    """Rewrite every stored copy of the corpus's state-naming metadata without the names; returns how many
    copies were rewritten."""
    storage = instance.event_log_storage
    copies = _copies(instance, corpus)
    for where, storage_id, entry in copies:
        clean = _redacted(entry)
        if where == "run":
            storage.update_event_log_record(storage_id, clean)
        else:
            with storage.index_connection() as conn:
                conn.execute(
                    SqlEventLogStorageTable.update()
                    .where(SqlEventLogStorageTable.c.id == storage_id)
                    .values(event=serialize_value(clean))
                )
        if where == "index" or not storage.is_run_sharded:
            _refresh_latest(storage, storage_id, clean)
    return len(copies)


def _refresh_latest(storage, storage_id: int, clean) -> None:
    """The asset's latest-materialisation record, when it is this event."""
    key = USER_REACTIONS.to_string()
    with storage.index_connection() as conn:
        row = conn.execute(AssetKeyTable.select().where(AssetKeyTable.c.asset_key == key)).first()
        if row is None or not row.last_materialization:
            return
        latest = deserialize_value(row.last_materialization)
        if isinstance(latest, dg.EventLogRecord) and latest.storage_id == storage_id:
            conn.execute(
                AssetKeyTable.update()
                .where(AssetKeyTable.c.asset_key == key)
                .values(
                    last_materialization=serialize_value(
                        dg.EventLogRecord(storage_id=storage_id, event_log_entry=clean)
                    )
                )
            )

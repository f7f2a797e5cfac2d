"""Layer 1: the code location's shape — asset specs, asset checks, jobs, schedules and sensors — against a
committed JSON snapshot, so that a change to any of them is seen in review rather than found in production.

Regenerate after an intended change, and commit the snapshot with it:

    UPDATE_SNAPSHOTS=1 pytest tests/test_defs_snapshot.py
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg

from memory_assets.common import SEVERITY_METADATA_KEY

SNAPSHOT = Path(__file__).parent / "snapshots" / "defs.json"
REGENERATE = "UPDATE_SNAPSHOTS=1 pytest tests/test_defs_snapshot.py"
_KIND_TAG = "dagster/kind/"


def _first_line(text: str | None) -> str:
    return (text or "").strip().split("\n", 1)[0].strip()


def _partitions(partitions_def: dg.PartitionsDefinition | None) -> str | None:
    if partitions_def is None:
        return None
    name = getattr(partitions_def, "name", None)
    return f"{type(partitions_def).__name__}:{name}" if name else type(partitions_def).__name__


def _keys(keys) -> list[str]:
    return sorted(k.to_user_string() for k in keys)


def _assets(defs: dg.Definitions) -> dict[str, dict]:
    graph = defs.resolve_asset_graph()
    out = {}
    for spec in defs.resolve_all_asset_specs():
        node = graph.get(spec.key)
        pool = defs.resolve_assets_def(spec.key).op.pool if node.is_materializable else None
        out[spec.key.to_user_string()] = {
            "group": spec.group_name,
            "deps": _keys(dep.asset_key for dep in spec.deps),
            "partitions": _partitions(spec.partitions_def),
            "owners": sorted(spec.owners),
            "tags": {k: v for k, v in sorted(spec.tags.items()) if not k.startswith(_KIND_TAG)},
            "kinds": sorted(spec.kinds),
            "pool": pool,
            # the version hashes all the first-party code the asset imports (memory_assets/catalog.py): any
            # edit in memory_core changes some, so the snapshot pins that there is one, not its value
            "code_versioned": bool(spec.code_version),
            "materializable": node.is_materializable,
            "description": _first_line(spec.description),
        }
    return out


def _checks(defs: dg.Definitions) -> dict[str, dict]:
    graph = defs.resolve_asset_graph()
    out = {}
    for key in graph.asset_check_keys:
        spec = graph.get_check_spec(key)
        out[f"{key.asset_key.to_user_string()}:{key.name}"] = {
            "asset": key.asset_key.to_user_string(),
            "name": key.name,
            "severity": spec.metadata.get(SEVERITY_METADATA_KEY),
            "blocking": spec.blocking,
            "partitions": _partitions(spec.partitions_def),
            "description": _first_line(spec.description),
        }
    return out


def _jobs(defs: dg.Definitions) -> dict[str, dict]:
    out = {}
    for job in defs.resolve_all_job_defs():
        if job.name.startswith("__"):  # Dagster's implicit asset job
            continue
        layer = job.asset_layer
        out[job.name] = {
            "assets": _keys(layer.selected_asset_keys),
            "checks": sorted(
                f"{k.asset_key.to_user_string()}:{k.name}" for k in layer.asset_graph.asset_check_keys
            ),
            "partitions": _partitions(job.partitions_def),
            "description": _first_line(job.description),
        }
    return out


def _schedules(defs: dg.Definitions) -> dict[str, dict]:
    out = {}
    for unresolved in defs.schedules or []:
        schedule = defs.resolve_schedule_def(unresolved.name)
        out[schedule.name] = {
            "job": schedule.job_name,
            "cron": schedule.cron_schedule,
            "timezone": schedule.execution_timezone,
            "default_status": schedule.default_status.value,
            "description": _first_line(schedule.description),
        }
    return out


def _sensors(defs: dg.Definitions) -> dict[str, dict]:
    out = {}
    for unresolved in defs.sensors or []:
        sensor = defs.resolve_sensor_def(unresolved.name)
        out[sensor.name] = {
            "jobs": sorted(t.job_name for t in sensor.targets),
            "minimum_interval_seconds": sensor.minimum_interval_seconds,
            "default_status": sensor.default_status.value,
            "description": _first_line(sensor.description),
        }
    return out


def defs_snapshot(defs: dg.Definitions) -> dict:
    """The reviewable shape of a code location: plain, sorted values only (no Python object reprs)."""
    return {
        "assets": _assets(defs),
        "asset_checks": _checks(defs),
        "jobs": _jobs(defs),
        "schedules": _schedules(defs),
        "sensors": _sensors(defs),
    }


def render(snapshot: dict) -> str:
    return json.dumps(snapshot, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_definitions_match_snapshot():
    from memory_assets.definitions import defs

    current = render(defs_snapshot(defs))
    if os.environ.get("UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.parent.mkdir(parents=True, exist_ok=True)
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.exists(), f"no snapshot at {SNAPSHOT}; create it with `{REGENERATE}`"
    stored = SNAPSHOT.read_text(encoding="utf-8")
    if current != stored:
        diff = "".join(
            difflib.unified_diff(
                stored.splitlines(keepends=True),
                current.splitlines(keepends=True),
                fromfile=f"{SNAPSHOT.name} (committed)",
                tofile=f"{SNAPSHOT.name} (definitions now)",
            )
        )
        raise AssertionError(
            f"the code location no longer matches {SNAPSHOT}:\n{diff}\n"
            f"If the change is intended, regenerate the snapshot and commit it: `{REGENERATE}`"
        )


def test_snapshot_is_deterministic_and_sees_a_changed_spec():
    from memory_assets.definitions import defs

    first = defs_snapshot(defs)
    assert render(first) == render(defs_snapshot(defs))
    assert first["asset_checks"]["messages:no_null_timestamps"] == {
        "asset": "messages",
        "name": "no_null_timestamps",
        "severity": "ERROR",
        "blocking": True,
        "partitions": "DynamicPartitionsDefinition:corpus",
        "description": "0% NULL timestamps",
    }
    regrouped = defs.map_resolved_asset_specs(
        func=lambda spec: spec.replace_attributes(group_name="elsewhere"),
        selection=dg.AssetSelection.assets("messages"),
    )
    changed = defs_snapshot(regrouped)
    assert changed["assets"]["messages"]["group"] == "elsewhere"
    assert {k for k in first["assets"] if first["assets"][k] != changed["assets"][k]} == {"messages"}

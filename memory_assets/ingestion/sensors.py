"""Drop-folder sensor: a file put in `<memory home>/inbox/` becomes a registered corpus and a build run."""

import json
import re

import dagster as dg

from memory_assets.jobs import build_corpus_job
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import plan_corpora, register
from memory_core.errors import MemoryOSError
from memory_resources.storage import MemoryStorage


def corpus_name_for(filename: str) -> str:
    stem = filename.rsplit(".", 1)[0]
    name = re.sub(r"[^A-Za-z0-9_.\-]", "_", stem).strip("._-") or "corpus"
    return name[:200]


@dg.sensor(
    job=build_corpus_job,
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.STOPPED,
    description="Registers files dropped into <memory home>/inbox as corpora and builds them.",
)
def inbox_sensor(
    context: dg.SensorEvaluationContext, storage: MemoryStorage
) -> dg.SensorResult | dg.SkipReason:
    home = storage.memory_home()
    inbox = home.root / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    new_names: list[tuple[str, str]] = []
    for path in sorted(p for p in inbox.iterdir() if p.is_file() and not p.name.startswith(".")):
        stat = path.stat()
        fingerprint = f"{stat.st_size}:{stat.st_mtime_ns}"
        if seen.get(path.name) == fingerprint:
            continue
        seen[path.name] = fingerprint
        try:
            sources = plan_corpora(corpus_name_for(path.name), path)
        except MemoryOSError as exc:
            context.log.warning(f"inbox: {path.name} was not registered: {exc}")
            continue
        register(home, sources)
        new_names += [(s.name, fingerprint) for s in sources]
    if not new_names:
        return dg.SkipReason("no new files in the inbox")
    existing = set(context.instance.get_dynamic_partitions(corpus_partitions.name))
    return dg.SensorResult(
        dynamic_partitions_requests=[
            corpus_partitions.build_add_request(sorted({n for n, _ in new_names} - existing))
        ],
        run_requests=[dg.RunRequest(partition_key=n, run_key=f"{n}:{fp}") for n, fp in new_names],
        cursor=json.dumps(seen),
    )

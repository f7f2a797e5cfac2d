"""The corpus sensors. The registry sensor keeps the corpus partitions equal to the registered corpora (a
partition added by hand in the UI is no corpus: it would show every asset partly filled). The drop-folder
sensor: a file put in `<memory home>/inbox/` becomes a registered corpus and a build run.

The sensor only reads: its evaluation (and the UI's "Preview tick result") writes nothing. The corpus is
registered by the run it requests: the run's tags carry the planned source (`SOURCE_TAGS`) and the `messages`
asset registers it before it ingests (`register_from_run_tags`).
"""

import json
import re

import dagster as dg

from memory_assets.jobs import build_corpus_job
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import CorpusSource, plan_corpora
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
    inbox = storage.memory_home().root / "inbox"
    if not inbox.is_dir():
        return dg.SkipReason(f"no inbox folder ({inbox})")
    seen: dict[str, str] = json.loads(context.cursor) if context.cursor else {}
    planned: list[tuple[CorpusSource, str]] = []
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
        planned += [(s, fingerprint) for s in sources]
    if not planned:
        return dg.SkipReason("no new files in the inbox")
    existing = set(context.instance.get_dynamic_partitions(corpus_partitions.name))
    return dg.SensorResult(
        dynamic_partitions_requests=[
            corpus_partitions.build_add_request(sorted({s.name for s, _ in planned} - existing))
        ],
        run_requests=[
            dg.RunRequest(partition_key=s.name, run_key=f"{s.name}:{fp}", tags=source_tags(s))
            for s, fp in planned
        ],
        cursor=json.dumps(seen),
    )


SOURCE_TAGS = ("memory_os/source_format", "memory_os/source_path", "memory_os/record_id")


def source_tags(source: CorpusSource) -> dict[str, str]:
    values = (source.source_format, source.path, source.record_id or "")
    return dict(zip(SOURCE_TAGS, values, strict=True))


def register_from_run_tags(home, corpus: str, tags: dict[str, str]) -> bool:
    """Register `corpus` from the source a sensor's run request carries; False when the run has none."""
    from memory_core.corpora import register

    if not tags.get(SOURCE_TAGS[1]):
        return False
    fmt, path, record_id = (tags.get(t, "") for t in SOURCE_TAGS)
    register(home, [CorpusSource(corpus, fmt, path, record_id or None)])
    return True


# a run in one of these states may still register its corpus (an inbox run does, from its tags)
_UNFINISHED = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Keeps the corpus partitions equal to the registered corpora: adds a partition for every "
    "registered corpus and removes one that is no corpus (added by hand in the UI), so the catalog shows "
    "only corpora. Never removes a registered corpus's partition, nor one a run may still register.",
)
def corpus_registry_sensor(
    context: dg.SensorEvaluationContext, storage: MemoryStorage
) -> dg.SensorResult | dg.SkipReason:
    # partitions first: `corpus add` registers before it adds the partition, so a corpus added between the
    # two reads is in the registry read second, never a "stray" of a registry read first
    partitions = set(context.instance.get_dynamic_partitions(corpus_partitions.name))
    registered = registered_corpora(storage.memory_home())
    missing = sorted(registered - partitions)
    # an empty registry removes nothing: a daemon looking at another memory home (a DAGSTER_HOME shared by
    # several) would otherwise take every corpus for a stray
    strays = [
        key
        for key in sorted(partitions - registered)
        if registered and not _has_unfinished_run(context.instance, key)
    ]
    if not missing and not strays:
        return dg.SkipReason(f"the {len(partitions)} corpus partitions are the registered corpora")
    for key in strays:
        context.log.warning(
            f"partition {key!r} is no registered corpus: removed (to build it, `memory-os corpus add {key} FILE`)"
        )
    requests: list = []
    if missing:
        requests.append(corpus_partitions.build_add_request(missing))
    if strays:
        requests.append(corpus_partitions.build_delete_request(strays))
    return dg.SensorResult(dynamic_partitions_requests=requests)


def registered_corpora(home) -> set[str]:
    """The names in the memory home's registry (none when there is no registry yet: nothing is created)."""
    if not (home.root / "registry.db").exists():
        return set()
    return {row["name"] for row in home.registrations()}


def _has_unfinished_run(instance: dg.DagsterInstance, partition: str) -> bool:
    runs = instance.get_runs(
        filters=dg.RunsFilter(statuses=_UNFINISHED, tags={"dagster/partition": partition}), limit=1
    )
    return bool(runs)

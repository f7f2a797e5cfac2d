"""The nightly triage: one run per registered corpus (every key of the `corpus` dynamic partitions)."""

import dagster as dg

from memory_assets.gardener.jobs import gardener_triage_job
from memory_assets.partitions import corpus_partitions

NIGHTLY_CRON = "0 3 * * *"


@dg.schedule(
    job=gardener_triage_job,
    cron_schedule=NIGHTLY_CRON,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.STOPPED,  # ships off: turn it on in the UI (Automation)
    description="Every night at 03:00 UTC, Phase 0 triage of every registered corpus (one run per corpus). "
    "Triage only proposes: nothing is applied without a Phase 1 run.",
)
def gardener_nightly(context: dg.ScheduleEvaluationContext) -> list[dg.RunRequest] | dg.SkipReason:
    corpora = sorted(context.instance.get_dynamic_partitions(corpus_partitions.name))
    if not corpora:
        return dg.SkipReason("no corpus registered")
    when = context.scheduled_execution_time
    night = when.strftime("%Y-%m-%d") if when else "adhoc"
    return [
        dg.RunRequest(
            partition_key=name,
            run_key=f"gardener_triage:{name}:{night}",
            tags={"memory_os/trigger": "gardener_nightly"},
        )
        for name in corpora
    ]

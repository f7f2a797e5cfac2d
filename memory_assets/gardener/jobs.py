"""Jobs of the gardener: triage on demand (and nightly, see schedules.py) and Phase 1 apply.

Phase 1 run config (the `gardener_actions` asset's config):

    ops:
      gardener_actions:
        config: {dry_run: false, proposal_ids: [...], categories: [merge], chooser: rules, max_actions: 200}
"""

import dagster as dg

gardener_triage_job = dg.define_asset_job(
    "gardener_triage_job",
    selection=dg.AssetSelection.assets("gardener_triage"),
    description="Phase 0 triage of one corpus: LifecycleProposals written as pending_review.",
)

gardener_apply_job = dg.define_asset_job(
    "gardener_apply",
    selection=dg.AssetSelection.assets("gardener_actions"),
    description="Phase 1 refactoring of one corpus's pending proposals (dry_run: true by default; set it to "
    "false to apply, proposal_ids to pick).",
)

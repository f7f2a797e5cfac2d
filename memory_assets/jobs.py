"""Jobs over the corpus-partitioned assets."""

import dagster as dg

# Every stage of a corpus, in lineage order: what `memory-os materialize` runs (a selection is a subset of
# it), the sensor requests and the UI re-executes. The gardener's Phase 1 is a dry run unless configured.
build_corpus_job = dg.define_asset_job(
    "build_corpus",
    selection=dg.AssetSelection.all(),
    description="Build a corpus end to end: messages → segments → … → graph and indexes, then the gardener's "
    "triage and a dry run of Phase 1.",
)

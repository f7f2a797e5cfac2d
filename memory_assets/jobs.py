"""Jobs over the corpus-partitioned assets."""

import dagster as dg

from memory_assets.partitions import corpus_partitions

# Every stage of a corpus, in lineage order (the sensor and the CLI's default selection).
build_corpus_job = dg.define_asset_job(
    "build_corpus",
    selection=dg.AssetSelection.groups(
        "ingestion", "extraction", "consolidation", "revision", "topics", "read_side"
    ),
    partitions_def=corpus_partitions,
    description="Build a corpus end to end: messages → segments → … → graph and indexes.",
)

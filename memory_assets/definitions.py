"""The code location: every stage's assets (each with its contracts as asset checks), jobs, schedules and
sensors, and the resources they share. Global policy is applied here, once."""

from __future__ import annotations

import dagster as dg

from memory_assets.catalog import CodeVersions, column_schema
from memory_assets.common import preview_quiet
from memory_assets.consolidation import assets as consolidation_assets
from memory_assets.extraction import assets as extraction_assets
from memory_assets.gardener import assets as gardener_assets
from memory_assets.gardener.jobs import gardener_apply_job, gardener_triage_job
from memory_assets.gardener.schedules import gardener_nightly
from memory_assets.ingestion import assets as ingestion_assets
from memory_assets.ingestion.sensors import corpus_registry_sensor, inbox_sensor
from memory_assets.jobs import build_corpus_job
from memory_assets.read_side import assets as read_side_assets
from memory_assets.revision import assets as revision_assets
from memory_assets.run_health import dead_run_reaper
from memory_assets.topics import assets as topics_assets
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.graph import GraphResource
from memory_resources.llm import LLMResource
from memory_resources.nlp import NlpResource
from memory_resources.storage import MemoryStorage
from memory_resources.vector_index import VectorIndexResource

ASSET_MODULES = [
    ingestion_assets,
    extraction_assets,
    consolidation_assets,
    topics_assets,
    read_side_assets,
    gardener_assets,
    revision_assets,
]


def _policy(spec: dg.AssetSpec) -> dg.AssetSpec:
    # every stage is owned by the memory team and carries its stage as a tag for filtering in the UI; the
    # catalog shows the columns of the table it writes
    schema = column_schema(spec.key.to_user_string())
    return spec.replace_attributes(owners=["team:memory-os"]).merge_attributes(
        tags={"memory_os/stage": spec.group_name or ""},
        metadata={"dagster/column_schema": schema} if schema is not None else {},
    )


def _versioned(assets: list[dg.AssetsDefinition]) -> list[dg.AssetsDefinition]:
    """Each asset with its code version (a hash of its module and the first-party code it imports) and a
    link to its source."""
    versions = CodeVersions()
    out = []
    for a in assets:
        version = versions.of_asset(a)
        out.append(a.map_asset_specs(lambda spec, v=version: spec.replace_attributes(code_version=v)))
    return dg.with_source_code_references(out)


def default_resources() -> dict[str, dg.ConfigurableResource]:
    return {
        "storage": MemoryStorage(),
        "llm": LLMResource(),
        "nlp": NlpResource(),
        "embeddings": EmbeddingsResource(),
        "graph_store": GraphResource(),
        "vector_index": VectorIndexResource(),
    }


def build_definitions(resources: dict[str, object] | None = None) -> dg.Definitions:
    """The code location with `resources` (default: `default_resources()`). Global policy is applied here:
    owners and stage tags on every asset, and the in-process executor for every job, the UI's asset runs
    included (a process per step would re-import torch and the sentence model for each one)."""
    with preview_quiet():  # map_asset_specs is a preview API too
        return _definitions(resources)


def _definitions(resources: dict[str, object] | None) -> dg.Definitions:
    return dg.Definitions(
        assets=_versioned(dg.load_assets_from_modules(ASSET_MODULES)),
        jobs=[build_corpus_job, gardener_triage_job, gardener_apply_job],
        schedules=[gardener_nightly],
        sensors=[inbox_sensor, corpus_registry_sensor, dead_run_reaper],
        resources=resources or default_resources(),
        executor=dg.in_process_executor,
    ).map_asset_specs(func=_policy)


defs = build_definitions()

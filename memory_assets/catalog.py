"""What the asset catalog says about each stage's tables: the tables an asset writes (its data version is their
content fingerprint, its `dagster/row_count` the rows of the first), their column schemas, and code versions."""

from __future__ import annotations

import hashlib
import inspect

import dagster as dg

from memory_core.store.db import CorpusStore
from memory_core.store.fingerprint import fingerprint, table

S, G, R = "source", "staging", "reflective"
# asset key → the (store, table)s it writes; the first is its main table
ASSET_TABLES: dict[str, list[tuple[str, str]]] = {
    "messages": [(S, "messages"), (S, "conversations"), (S, "message_revisions"), (S, "dead_letters")],
    "segments": [(G, "segments")],
    "mentions": [(G, "mentions"), (G, "segment_extractions")],
    "user_reactions": [(R, "user_reactions")],
    "canonical_concepts": [(G, "canonical_concepts"), (G, "concept_evidence"), (G, "action_log")],
    "topics": [(G, "topics"), (G, "topic_segments")],
    "weighted_links": [(G, "topic_concept_links")],
    "domains": [(G, "domains"), (G, "anchor_entities")],
    "claims": [(G, "claims")],
    "fact_states": [(G, "fact_states")],
    "repairs": [(G, "repair_queue"), (G, "canonical_concepts")],
    "gardener_triage": [(G, "lifecycle_proposals")],
    "gardener_actions": [(G, "gardener_actions"), (G, "canonical_concepts")],
}
# columns a later stage fills in: not the content of the asset that writes the row
LATER_COLUMNS = {(G, "mentions"): {"consolidated_id"}, (G, "topics"): {"domain_id", "anchor_id"}}
# the graph and the indexes are loaded from these assets' tables: their content is a function of them
DERIVED = {
    "graph": [
        "messages",
        "segments",
        "canonical_concepts",
        "topics",
        "weighted_links",
        "domains",
        "fact_states",
    ],
    "indexes": ["messages", "segments", "canonical_concepts", "topics"],
}


def tables_of(asset_key: str) -> list[tuple[str, str]]:
    if asset_key in DERIVED:
        return [t for key in DERIVED[asset_key] for t in ASSET_TABLES[key]]
    return ASSET_TABLES.get(asset_key, [])


def version_metadata(store: CorpusStore, asset_key: str) -> tuple[dg.DataVersion | None, dict[str, object]]:
    """The materialisation's data version (a content hash) and its `dagster/row_count`."""
    tables = tables_of(asset_key)
    if not tables:
        return None, {}
    fp = fingerprint(store, tables, LATER_COLUMNS)
    metadata: dict[str, object] = {}
    if asset_key not in DERIVED:
        store_name, table_name = tables[0]
        metadata["dagster/row_count"] = fp.rows[f"{store_name}.{table_name}"]
    return dg.DataVersion(fp.digest[:32]), metadata


def column_schema(asset_key: str) -> dg.TableSchema | None:
    """The columns of the asset's main table (name, SQL type, nullability, description when documented)."""
    tables = ASSET_TABLES.get(asset_key)
    if not tables:
        return None
    t = table(*tables[0])
    return dg.TableSchema(
        columns=[
            dg.TableColumn(
                name=c.name,
                type=str(c.type),
                description=c.comment,
                constraints=dg.TableColumnConstraints(nullable=bool(c.nullable), unique=bool(c.primary_key)),
            )
            for c in t.columns
        ]
    )


def code_version(assets_def: dg.AssetsDefinition) -> str:
    """A hash of the asset's own function source: a changed wrapper marks the asset (and what follows) stale.
    (A change inside memory_core does not: rebuild explicitly after upgrading.)"""
    fn = assets_def.op.compute_fn.decorated_fn  # type: ignore[union-attr]
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:12]

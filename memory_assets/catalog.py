"""What the asset catalog says about each stage's tables: the tables an asset writes (its data version is their
content fingerprint, its `dagster/row_count` the rows of the first), their column schemas, and code versions
(a hash of the code each asset runs)."""

from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

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
# asset key → the few figures of its report a user watches over time, plotted as `quality/<figure>` (with the
# timings and `dagster/row_count`); the asset's other numbers stay visible in one JSON entry, not plotted
QUALITY_FIGURES: dict[str, tuple[str, ...]] = {
    "messages": ("dead_lettered", "derived_timestamp_share"),
    "segments": ("mean_tokens", "messages_split"),
    "mentions": ("span_verified_rate", "schema_validity_rate", "cost_usd"),
    "user_reactions": ("schema_validity", "share_not_other", "null_timestamp_rate"),
    "canonical_concepts": ("coverage", "residual_share", "purity", "evidence_grounding", "churn"),
    "topics": ("silhouette", "noise_ratio", "objective", "label_centroid_distance_median"),
    "weighted_links": ("links_per_topic_mean", "topics_unlinked", "weight_median"),
    "domains": ("domains", "anchors", "topics_in_general_anchor"),
    "claims": ("mentions_with_claims", "concepts_invalidated"),
    "fact_states": ("supersessions", "conflicts", "claims_disputed"),
    "repairs": ("repaired", "escalated", "remaining_queued"),
    "gardener_triage": ("proposals_total", "merge_candidates", "noise_candidates"),
    "gardener_actions": ("anchored_rate_after", "purity_after", "accepted", "execution_errors"),
    "graph": ("nodes_total", "edges_total"),
    "indexes": ("segments_size", "concepts_size"),
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


# the packages whose code decides what an asset writes: an asset's code version covers every module of
# these that its module imports, transitively (the asset module itself is in memory_assets)
FIRST_PARTY = ("memory_assets", "memory_core", "memory_query", "memory_resources")


def module_path(name: str) -> Path | None:
    """The source file of first-party module `name` (None: not a first-party module, or no such module):
    found on the file system next to the package, without importing anything."""
    parts = name.split(".")
    if parts[0] not in FIRST_PARTY:
        return None
    base = _package_root(parts[0]).joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


@functools.cache
def _package_root(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    assert spec is not None and spec.origin, package
    return Path(spec.origin).parent.parent


def module_source(name: str) -> str | None:
    """The source text of first-party module `name` (None: not one)."""
    path = module_path(name)
    return path.read_text(encoding="utf-8") if path else None


class CodeVersions:
    """Code versions from what the code imports: an asset's version is a hash of its module and of every
    first-party module that module imports, directly or through others (an AST walk over the sources, lazy
    imports inside functions included; each module read and parsed once). A change inside memory_core
    marks the assets whose code reaches it stale, and only those."""

    def __init__(self, source_of: Callable[[str], str | None] = module_source):
        self._source_of = source_of
        self._sources: dict[str, str | None] = {}
        self._imports: dict[str, frozenset[str]] = {}

    def source(self, name: str) -> str | None:
        if name not in self._sources:
            self._sources[name] = self._source_of(name)
        return self._sources[name]

    def closure(self, module: str) -> list[str]:
        """`module` and the first-party modules it imports transitively (with their parent packages)."""
        seen: set[str] = set()
        todo = [module]
        while todo:
            name = todo.pop()
            if name in seen or self.source(name) is None:
                continue
            seen.add(name)
            todo += self._imports_of(name)
        return sorted(seen)

    def version(self, module: str) -> str:
        digest = hashlib.sha256()
        for name in self.closure(module):
            digest.update(f"{name}\0{self.source(name)}\0".encode())
        return digest.hexdigest()[:12]

    def of_asset(self, assets_def: dg.AssetsDefinition) -> str:
        fn = assets_def.op.compute_fn.decorated_fn  # type: ignore[union-attr]
        return self.version(fn.__module__)

    def _imports_of(self, name: str) -> frozenset[str]:
        if name not in self._imports:
            source = self.source(name) or ""
            is_package = self._is_package(name)
            self._imports[name] = frozenset(_with_parents(_imported_names(source, name, is_package)))
        return self._imports[name]

    def _is_package(self, name: str) -> bool:
        path = module_path(name)
        return path is not None and path.name == "__init__.py"


def _imported_names(source: str, module: str, is_package: bool) -> Iterator[str]:
    package = module if is_package else module.rpartition(".")[0]
    for node in _import_statements(source):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = ".".join(parts[: len(parts) - node.level + 1])
                base = f"{parent}.{base}" if base else parent
            yield base
            # `from pkg import name`: name may be a submodule
            yield from (f"{base}.{alias.name}" for alias in node.names if alias.name != "*")


_IMPORT_LINE = re.compile(r"^[ \t]*(?:import[ \t]|from[ \t]+[\w.]+[ \t]+import\b)", re.MULTILINE)


def _import_statements(source: str) -> Iterator[ast.stmt]:
    """The module's import statements, nested ones (lazy imports in functions) included. Only the lines that
    start one are parsed (a parenthesised name list read to its closing parenthesis), not the whole module:
    parsing every module took most of the walk's time. A docstring line that merely looks like an import
    does not parse and is skipped."""
    for match in _IMPORT_LINE.finditer(source):
        end = _line_end(source, match.start())
        while source[match.start() : end].rstrip().endswith("\\"):  # a backslash continues the statement
            end = _line_end(source, end + 1)
        text = source[match.start() : end]
        if "(" in text and ")" not in text:
            close = source.find(")", match.start())
            text = source[match.start() : close + 1] if close >= 0 else text
        try:
            yield from ast.parse(text.strip()).body
        except SyntaxError:
            continue


def _line_end(source: str, start: int) -> int:
    end = source.find("\n", start)
    return end if end >= 0 else len(source)


def _with_parents(names: Iterable[str]) -> Iterator[str]:
    for name in names:
        if name.split(".")[0] not in FIRST_PARTY:
            continue
        parts = name.split(".")
        yield from (".".join(parts[:i]) for i in range(1, len(parts) + 1))

"""The graph resource: which graph store the `graph` asset loads and the read side reads, opened by the core
factory (`memory_core.graph.open_graph`).

    backend: embedded (default; a LadybugDB file per corpus under the memory home) | neo4j

Neo4j settings are resolved when a run opens the store: `neo4j_uri` / `neo4j_user` / `neo4j_password` /
`neo4j_database` if set (use `dg.EnvVar` for the password), else the NEO4J_URI / NEO4J_USER /
NEO4J_PASSWORD / NEO4J_DATABASE environment variables. The password never appears in metadata, logs or errors.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.graph import GraphConfigError, GraphSettings, GraphStore, open_graph
from memory_core.store.db import CorpusStore

_DEFAULTS = GraphSettings()


class GraphResource(ConfigurableResource):
    backend: Literal["embedded", "neo4j"] = Field(
        default="embedded", description="embedded LadybugDB or a Neo4j server"
    )
    neo4j_uri: str | None = Field(default=None, description="bolt:// or neo4j:// URI (default: $NEO4J_URI)")
    neo4j_user: str | None = Field(default=None, description="user (default: $NEO4J_USER, else neo4j)")
    neo4j_password: str | None = Field(
        default=None, description="password (use dg.EnvVar; default: $NEO4J_PASSWORD)"
    )
    neo4j_database: str | None = Field(
        default=None, description="database on the server (default: $NEO4J_DATABASE, else neo4j)"
    )
    batch_size: int = Field(default=_DEFAULTS.batch_size, description="rows per UNWIND batch (neo4j)")

    def settings(self) -> GraphSettings:
        return GraphSettings(**{f.name: getattr(self, f.name) for f in fields(GraphSettings)})

    def store_for(self, store: CorpusStore) -> GraphStore:
        return open_graph(store, self.settings())

    def describe(self, store: CorpusStore) -> dict:
        """Where the graph lives, for metadata (never the password)."""
        return {"backend": self.backend, "location": self.settings().location(store)}


__all__ = ["GraphConfigError", "GraphResource"]

"""The graph resource: which graph store the `graph` asset loads and the read side reads.

    backend: embedded (default; a LadybugDB file per corpus under the memory home) | neo4j

Neo4j settings are resolved when a run builds the store: `neo4j_uri` / `neo4j_user` / `neo4j_password`
if set (use `dg.EnvVar`), else the NEO4J_URI / NEO4J_USER / NEO4J_PASSWORD environment variables. The
password never appears in metadata, logs or errors.
"""

from __future__ import annotations

import os
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.graph import GraphConfigError, GraphStore, embedded_graph_path, open_graph
from memory_core.graph.neo4j_store import redacted_uri
from memory_core.store.db import CorpusStore


class GraphResource(ConfigurableResource):
    backend: Literal["embedded", "neo4j"] = Field(
        default="embedded", description="embedded LadybugDB or a Neo4j server"
    )
    neo4j_uri: str | None = Field(default=None, description="bolt:// or neo4j:// URI (default: $NEO4J_URI)")
    neo4j_user: str | None = Field(default=None, description="user (default: $NEO4J_USER, else neo4j)")
    neo4j_password: str | None = Field(
        default=None, description="password (use dg.EnvVar; default: $NEO4J_PASSWORD)"
    )
    neo4j_database: str = Field(default="neo4j", description="database name on the server")
    batch_size: int = Field(default=5000, description="rows per UNWIND batch (neo4j)")

    def store_for(self, store: CorpusStore) -> GraphStore:
        return open_graph(
            store,
            self.backend,
            neo4j_uri=self.neo4j_uri,
            neo4j_user=self.neo4j_user,
            neo4j_password=self.neo4j_password,
            neo4j_database=self.neo4j_database,
            batch_size=self.batch_size,
        )

    def describe(self, store: CorpusStore) -> dict:
        """Where the graph lives, for metadata (never the password)."""
        if self.backend == "embedded":
            return {"backend": "embedded", "location": str(embedded_graph_path(store))}
        uri = redacted_uri(self.neo4j_uri or os.environ.get("NEO4J_URI", ""))
        return {"backend": "neo4j", "location": f"{uri} db={self.neo4j_database} corpus={store.name}"}


__all__ = ["GraphConfigError", "GraphResource"]

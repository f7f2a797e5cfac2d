"""The vector index resource: how the `indexes` asset builds each family's FAISS index and how readers
open it."""

from __future__ import annotations

from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.store.db import CorpusStore
from memory_core.vector_index import DEFAULT_APPROXIMATE_THRESHOLD, FaissIndex, IndexPolicy, open_family_index


class VectorIndexResource(ConfigurableResource):
    kind: Literal["auto", "flat", "ivf", "hnsw"] = Field(
        default="auto", description="auto: flat below the threshold, the approximate kind from it on"
    )
    approximate_threshold: int = Field(
        default=DEFAULT_APPROXIMATE_THRESHOLD, description="vectors from which auto is approximate"
    )
    approximate_kind: Literal["ivf", "hnsw"] = Field(default="hnsw")
    nprobe: int = Field(default=16, description="ivf: lists searched per query")
    hnsw_m: int = Field(default=32)
    hnsw_ef_construction: int = Field(default=64)
    hnsw_ef_search: int = Field(default=128)

    def policy(self) -> IndexPolicy:
        return IndexPolicy(
            kind=self.kind,
            approximate_threshold=self.approximate_threshold,
            approximate_kind=self.approximate_kind,
            nprobe=self.nprobe,
            hnsw_m=self.hnsw_m,
            hnsw_ef_construction=self.hnsw_ef_construction,
            hnsw_ef_search=self.hnsw_ef_search,
        )

    def open(self, store: CorpusStore, family: str) -> FaissIndex | None:
        return open_family_index(store, family)

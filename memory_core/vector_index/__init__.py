"""The vector index capability: one abstract base, FAISS as the provider, and the corpus's index families."""

from memory_core.vector_index.base import SearchResult, VectorIndex
from memory_core.vector_index.faiss_index import DEFAULT_APPROXIMATE_THRESHOLD, FaissIndex, IndexPolicy
from memory_core.vector_index.families import (
    FAMILIES,
    FamilyReport,
    build_family_index,
    family_path,
    open_family_index,
    source_ids,
)

__all__ = [
    "DEFAULT_APPROXIMATE_THRESHOLD",
    "FAMILIES",
    "FaissIndex",
    "FamilyReport",
    "IndexPolicy",
    "SearchResult",
    "VectorIndex",
    "build_family_index",
    "family_path",
    "open_family_index",
    "source_ids",
]

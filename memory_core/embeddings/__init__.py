"""Embedding capability: one abstract base, one module per provider."""

from memory_core.embeddings.base import Embedder
from memory_core.embeddings.hashing import HashingEmbedder

__all__ = ["Embedder", "HashingEmbedder"]

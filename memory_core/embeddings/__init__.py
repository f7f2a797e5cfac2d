"""Embedding capability: one abstract base, one module per provider, one factory, a shared persistent cache.

Providers (heavy SDKs imported lazily): `HashingEmbedder` (tests), `TorchBertEmbedder` (local
all-MiniLM-L6-v2, the default; sentence-transformers' vectors on torch), `SentenceTransformerEmbedder` (other
local models), `OpenAIEmbedder` (any OpenAI-compatible `/embeddings`), each built by
`build_embedder(EmbedderSpec(...))` and describing itself with `embedder.spec()`.
Wrap any of them in `CachedEmbedder(embedder, EmbeddingCache.for_home(home))`. The read side embeds queries
with `build_query_embedder(spec)`: the same vectors, on `NumpyBertEmbedder` (no torch) where it can.
"""

from memory_core.embeddings.base import Embedder, EmbedderSpec, l2_normalise
from memory_core.embeddings.bert_numpy import NumpyBertEmbedder
from memory_core.embeddings.bert_torch import TorchBertEmbedder
from memory_core.embeddings.cache import CachedEmbedder, EmbeddingCache
from memory_core.embeddings.factory import (
    EmbedderConfigError,
    build_embedder,
    build_query_embedder,
    index_embedder_spec,
)
from memory_core.embeddings.hashing import HashingEmbedder
from memory_core.embeddings.openai_embeddings import OpenAIEmbedder
from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbedderConfigError",
    "EmbedderSpec",
    "EmbeddingCache",
    "HashingEmbedder",
    "NumpyBertEmbedder",
    "OpenAIEmbedder",
    "SentenceTransformerEmbedder",
    "TorchBertEmbedder",
    "build_embedder",
    "build_query_embedder",
    "index_embedder_spec",
    "l2_normalise",
]

"""The embeddings resource: builds the memory_core embedder every stage uses, wrapped in the shared cache.

    provider: local (default, all-MiniLM-L6-v2 on CPU) | openai (any OpenAI-compatible /embeddings) | hashing

In an asset:

    embedder = embeddings.cached_embedder(storage.memory_home())   # CachedEmbedder
    vectors = embedder.embed(texts)                                 # (n, dim) float32, L2-normalised rows

The API key is resolved when a run builds the embedder (from `api_key`, e.g. `dg.EnvVar("OPENAI_API_KEY")`,
or else the environment variable named by `api_key_env`), never at import, and never logged.
"""

from __future__ import annotations

import os
from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.embeddings import CachedEmbedder, Embedder, EmbeddingCache, HashingEmbedder
from memory_core.embeddings.openai_embeddings import OpenAIEmbedder
from memory_core.embeddings.sentence_transformer import DEFAULT_BATCH_SIZE, SentenceTransformerEmbedder
from memory_core.errors import MemoryOSError


class EmbeddingsConfigError(MemoryOSError):
    """The embeddings resource cannot build its provider (e.g. no API key for `openai`)."""


class EmbeddingsResource(ConfigurableResource):
    provider: Literal["local", "openai", "hashing"] = Field(
        default="local", description="which embedder to build"
    )
    model: str | None = Field(
        default=None,
        description="local: a sentence-transformers model folder (default: packaged all-MiniLM-L6-v2); openai: model name",
    )
    base_url: str | None = Field(
        default=None, description="openai: endpoint base URL (…/v1); Azure: the resource endpoint"
    )
    api_key: str | None = Field(
        default=None, description="openai: the key (use dg.EnvVar); else read from api_key_env"
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY", description="openai: environment variable holding the key"
    )
    azure_api_version: str | None = Field(default=None, description="openai: set to use Azure OpenAI")
    dimensions: int | None = Field(
        default=None, description="openai: requested vector size (text-embedding-3)"
    )
    batch_size: int | None = Field(
        default=None, description="texts per forward pass / request (default by provider)"
    )
    threads: int | None = Field(
        default=None,
        description="local: torch threads (default: half the cores, measured best on a shared machine)",
    )
    hashing_dim: int = Field(default=256, description="hashing: vector size")
    use_cache: bool = Field(
        default=True, description="keep vectors in the memory home's shared embedding cache"
    )

    def embedder(self) -> Embedder:
        """The bare provider (no cache)."""
        if self.provider == "hashing":
            return HashingEmbedder(self.hashing_dim)
        if self.provider == "local":
            return SentenceTransformerEmbedder(
                model_path=self.model, batch_size=self.batch_size or DEFAULT_BATCH_SIZE, threads=self.threads
            )
        if not self.model:
            raise EmbeddingsConfigError(
                "embeddings provider 'openai' needs `model` (e.g. text-embedding-3-small)"
            )
        key = self.api_key or os.environ.get(self.api_key_env, "")
        if not key:
            raise EmbeddingsConfigError(
                f"embeddings provider 'openai' needs an API key: set `api_key` or the {self.api_key_env} environment variable"
            )
        return OpenAIEmbedder(
            model=self.model,
            api_key=key,
            base_url=self.base_url,
            dimensions=self.dimensions,
            batch_size=self.batch_size or 256,
            azure_api_version=self.azure_api_version,
        )

    def cached_embedder(self, home) -> Embedder:
        """The provider behind the shared cache of `home` (a `MemoryHome`); the bare provider if caching is off."""
        inner = self.embedder()
        if not self.use_cache:
            return inner
        return CachedEmbedder(inner, EmbeddingCache.for_home(home))

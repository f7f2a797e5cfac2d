"""The embeddings resource: the configuration of the embedder every stage uses, built by the core factory
(`memory_core.embeddings.build_embedder`, the one the read side rebuilds query embedders with from the spec
each index saves) and wrapped in the shared cache.

    provider: local (default, all-MiniLM-L6-v2 on CPU) | openai (any OpenAI-compatible /embeddings) | hashing

In an asset:

    embedder = embeddings.cached_embedder(storage.memory_home())   # CachedEmbedder
    vectors = embedder.embed(texts)                                 # (n, dim) float32, L2-normalised rows

The API key is resolved when a run builds the embedder (from `api_key`, e.g. `dg.EnvVar("OPENAI_API_KEY")`,
or else the environment variable named by `api_key_env`), never at import, and never logged or saved.
"""

from __future__ import annotations

from typing import Literal

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.embeddings import CachedEmbedder, Embedder, EmbedderSpec, EmbeddingCache, build_embedder
from memory_core.embeddings.factory import DEFAULT_HASHING_DIM
from memory_core.settings import OPENAI_API_KEY, offline_model_hub


class EmbeddingsResource(ConfigurableResource):
    provider: Literal["local", "openai", "hashing"] = Field(
        default="local", description="which embedder to build"
    )
    model: str | None = Field(
        default=None,
        description="local: a sentence-transformers model folder (default: packaged all-MiniLM-L6-v2); openai: model name",
    )
    base_url: str | None = Field(
        default=None,
        description="openai: endpoint base URL (…/v1; Azure: the resource endpoint); default $OPENAI_BASE_URL",
    )
    api_key: str | None = Field(
        default=None, description="openai: the key (use dg.EnvVar); else read from api_key_env"
    )
    api_key_env: str = Field(
        default=OPENAI_API_KEY.name, description="openai: environment variable holding the key"
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
    precision: str | None = Field(
        default=None,
        description="local: the dense layers' arithmetic, float32 | bfloat16 | auto (bfloat16 where the CPU "
        "computes it natively: ~1.8x faster here, vectors within a cosine of 1e-4); default $MEMORY_OS_EMBED_PRECISION, else auto",
    )
    hashing_dim: int = Field(default=DEFAULT_HASHING_DIM, description="hashing: vector size")
    use_cache: bool = Field(
        default=True, description="keep vectors in the memory home's shared embedding cache"
    )

    def setup_for_execution(self, context) -> None:
        """At a run's start, only the hub's offline variables (here, not on the thread that may load the model
        beside running stages). The model itself loads with the first vector the cache does not have: an
        unchanged corpus never loads it (`memory_assets/prefetch.py`)."""
        if self.provider == "local":
            offline_model_hub()

    def spec(self) -> EmbedderSpec:
        """The configured embedder as a spec (its identity is filled in by the built embedder's `spec()`)."""
        if self.provider == "hashing":
            return EmbedderSpec("hashing", dim=self.hashing_dim)
        if self.provider == "local":
            return EmbedderSpec("local", model_path=self.model)
        return EmbedderSpec(
            "openai",
            model=self.model,
            dimensions=self.dimensions,
            base_url=self.base_url,
            azure_api_version=self.azure_api_version,
            api_key_env=self.api_key_env,
        )

    def embedder(self) -> Embedder:
        """The bare provider (no cache)."""
        return build_embedder(
            self.spec(),
            api_key=self.api_key,
            batch_size=self.batch_size,
            threads=self.threads,
            precision=self.precision,
        )

    def cached_embedder(self, home) -> Embedder:
        """The provider behind the shared cache of `home` (a `MemoryHome`); the bare provider if caching is off."""
        inner = self.embedder()
        if not self.use_cache:
            return inner
        return CachedEmbedder(inner, EmbeddingCache.for_home(home))

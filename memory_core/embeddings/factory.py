"""The one way to build an embedder: from an `EmbedderSpec` — the embeddings resource's configuration when the
pipeline embeds, the spec saved in a vector index's metadata when the read side embeds a query. Both paths
build the same provider with the same settings; an API key is resolved here, when the embedder is built
(the given key, else the variable the spec names), never at import and never saved.

A local BERT-family model (the default all-MiniLM-L6-v2) runs on one of two runtimes that compute
sentence-transformers' vectors without importing it: the pipeline's `build_embedder` on torch's kernels
(`bert_torch`: a build does not wait ~12 s for sentence-transformers' imports), the read side's
`build_query_embedder` on numpy (`bert_numpy`: a query does not pay for loading torch). Any other local model
is embedded by sentence-transformers itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from memory_core.embeddings.base import Embedder, EmbedderSpec
from memory_core.errors import MemoryOSError
from memory_core.settings import OPENAI_API_KEY, OPENAI_BASE_URL, env_value

PROVIDERS = ("local", "openai", "hashing")
DEFAULT_HASHING_DIM = 256
DEFAULT_OPENAI_BATCH = 256


class EmbedderConfigError(MemoryOSError):
    """An embedder cannot be built as specified (an unknown provider, no model, no API key)."""


def build_embedder(
    spec: EmbedderSpec,
    api_key: str | None = None,
    batch_size: int | None = None,
    threads: int | None = None,
    precision: str | None = None,
) -> Embedder:
    """The provider `spec` describes; `batch_size` and `threads` tune it without changing its vectors, and
    `precision` a local BERT model's arithmetic (`memory_core.embeddings.precision`; None: the setting)."""
    if spec.provider == "hashing":
        from memory_core.embeddings.hashing import HashingEmbedder

        return HashingEmbedder(spec.dim or DEFAULT_HASHING_DIM)
    if spec.provider == "local":
        from memory_core.embeddings.bert_numpy import packaged_model_path, supports
        from memory_core.embeddings.sentence_transformer import (
            DEFAULT_BATCH_SIZE,
            SentenceTransformerEmbedder,
        )

        common = dict(
            model_path=spec.model_path,
            model_name=spec.model_name or None,
            batch_size=batch_size or DEFAULT_BATCH_SIZE,
            threads=threads,
            max_seq_length=spec.max_seq_length,
        )
        if supports(spec.model_path or packaged_model_path()):
            from memory_core.embeddings.bert_torch import TorchBertEmbedder

            return TorchBertEmbedder(**common, precision=precision)
        return SentenceTransformerEmbedder(**common)  # float32: sentence-transformers' own arithmetic
    if spec.provider == "openai":
        return _openai(spec, api_key, batch_size)
    raise EmbedderConfigError(
        f"unknown embeddings provider {spec.provider!r} (one of {', '.join(PROVIDERS)})"
    )


def build_query_embedder(spec: EmbedderSpec, api_key: str | None = None) -> Embedder:
    """The embedder a query is embedded with: `build_embedder(spec)`'s vectors, on the fastest-starting
    runtime that computes them (see the module docstring)."""
    if spec.provider == "local":
        from memory_core.embeddings.bert_numpy import NumpyBertEmbedder, packaged_model_path, supports

        if supports(spec.model_path or packaged_model_path()):
            return NumpyBertEmbedder(
                model_path=spec.model_path,
                model_name=spec.model_name or None,
                max_seq_length=spec.max_seq_length,
            )
    return build_embedder(spec, api_key=api_key)


def _openai(spec: EmbedderSpec, api_key: str | None, batch_size: int | None) -> Embedder:
    from memory_core.embeddings.openai_embeddings import OpenAIEmbedder

    if not spec.model:
        raise EmbedderConfigError("embeddings provider 'openai' needs `model` (e.g. text-embedding-3-small)")
    key_env = spec.api_key_env or OPENAI_API_KEY.name
    key = api_key or env_value(key_env)
    if not key:
        raise EmbedderConfigError(
            f"embeddings provider 'openai' ({spec.model_name or spec.model}) needs an API key: "
            f"set `api_key` or the {key_env} environment variable"
        )
    return OpenAIEmbedder(
        model=spec.model,
        api_key=key,
        api_key_env=key_env,
        base_url=spec.base_url or OPENAI_BASE_URL.get(),
        dimensions=spec.dimensions,
        batch_size=batch_size or DEFAULT_OPENAI_BATCH,
        azure_api_version=spec.azure_api_version,
    )


def index_embedder_spec(meta: Mapping, dim: int) -> EmbedderSpec:
    """The spec of the embedder that built an index, from its metadata: the saved spec, or — for an index
    built before specs were saved — the one its model name implies."""
    saved = meta.get("embedder")
    if saved:
        return EmbedderSpec.from_dict(saved)
    return _spec_from_model_name(meta.get("model", ""), dim)


def _spec_from_model_name(model_name: str, dim: int) -> EmbedderSpec:
    from memory_core.embeddings.sentence_transformer import MINILM_MODEL_NAME

    if model_name == MINILM_MODEL_NAME:
        return EmbedderSpec("local", model_name, dim)
    hashing = re.fullmatch(r"hashing-(\d+)", model_name)
    if hashing:
        return EmbedderSpec("hashing", model_name, int(hashing.group(1)))
    remote = re.fullmatch(r"openai:([^@]+)(?:@(\d+))?", model_name)
    if remote:
        dimensions = int(remote.group(2)) if remote.group(2) else None
        return EmbedderSpec("openai", model_name, dim, model=remote.group(1), dimensions=dimensions)
    raise EmbedderConfigError(
        f"the index was embedded with {model_name!r} (dim {dim}) and saved no embedder spec: rebuild it "
        "(materialise `indexes`) to query it"
    )

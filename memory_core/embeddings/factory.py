"""Rebuild the embedder named by a model identity (as recorded in an index's metadata), outside Dagster.

The read side embeds queries with the model that embedded the corpus, whatever the build was configured
with: `sentence-transformers/all-MiniLM-L6-v2` (the packaged local model), `hashing-<dim>`, a local model
folder's name, or `openai:<model>[@<dimensions>]` (key and base URL from OPENAI_API_KEY / OPENAI_BASE_URL,
read now, at call time).
"""

from __future__ import annotations

import os
import re

from memory_core.embeddings.base import Embedder
from memory_core.embeddings.hashing import HashingEmbedder
from memory_core.errors import MemoryOSError


class UnknownEmbedderError(MemoryOSError):
    """An index was built by an embedder this process cannot rebuild."""


def embedder_from_spec(model_name: str, dim: int | None = None) -> Embedder:
    from memory_core.embeddings.sentence_transformer import MINILM_MODEL_NAME, SentenceTransformerEmbedder

    if model_name == MINILM_MODEL_NAME:
        return SentenceTransformerEmbedder()
    hashing = re.fullmatch(r"hashing-(\d+)", model_name)
    if hashing:
        return HashingEmbedder(int(hashing.group(1)))
    remote = re.fullmatch(r"openai:([^@]+)(?:@(\d+))?", model_name)
    if remote:
        from memory_core.embeddings.openai_embeddings import OpenAIEmbedder

        key = os.environ.get("OPENAI_API_KEY", "")
        if not key:
            raise UnknownEmbedderError(
                f"the index was embedded with {model_name}: set OPENAI_API_KEY to query it"
            )
        return OpenAIEmbedder(
            model=remote.group(1),
            api_key=key,
            base_url=os.environ.get("OPENAI_BASE_URL") or None,
            dimensions=int(remote.group(2)) if remote.group(2) else None,
        )
    folder = os.environ.get("MEMORY_OS_EMBEDDING_MODEL_PATH")
    if folder and os.path.basename(folder.rstrip("/")) == model_name:
        return SentenceTransformerEmbedder(model_path=folder)
    raise UnknownEmbedderError(
        f"the index was embedded with {model_name!r}, which this process cannot rebuild"
        + (f" (dim {dim})" if dim else "")
    )

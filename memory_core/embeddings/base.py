"""The embedding capability every provider implements, and the spec that rebuilds a provider."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np


@dataclass(frozen=True)
class EmbedderSpec:
    """Everything that decides which vectors an embedder produces — saved in each vector index's metadata at
    build time, so the read side rebuilds the same embedder (`build_embedder`) and its queries land in the
    same space. Tuning that does not change the vectors (batch size, threads) and secrets are not part of it:
    an OpenAI-compatible key is read from `api_key_env` when the embedder is rebuilt. A configuration (the
    embeddings resource) is a spec with the identity left empty; a built embedder's `spec()` fills it."""

    provider: str  # local | openai | hashing
    model_name: str = ""  # the identity, part of every embedding-cache key ("": the provider's own)
    dim: int = 0  # hashing: the vector size; 0 in a request = the provider's default / known after loading
    normalise: bool = True  # rows L2-normalised (inner product = cosine)
    model: str | None = None  # openai: the model (Azure: the deployment)
    model_path: str | None = (
        None  # local: a sentence-transformers folder; None: the packaged all-MiniLM-L6-v2
    )
    max_seq_length: int | None = None  # local: truncation, when not the model's own
    dimensions: int | None = None  # openai: the requested vector size (text-embedding-3)
    base_url: str | None = None  # openai: the endpoint
    azure_api_version: str | None = None  # openai: set for Azure OpenAI
    api_key_env: str | None = None  # openai: the variable holding the key (never the key)

    def as_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if v is not None}

    @classmethod
    def from_dict(cls, data: Mapping) -> EmbedderSpec:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class Embedder(ABC):
    """Maps texts to L2-normalised float32 vectors (so inner product = cosine)."""

    #: identity of the model, part of every cache key (e.g. "sentence-transformers/all-MiniLM-L6-v2")
    model_name: str
    dim: int

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """An array of shape (len(texts), dim), float32, rows L2-normalised."""

    @abstractmethod
    def spec(self) -> EmbedderSpec:
        """How to rebuild this embedder (see `EmbedderSpec`)."""

    def vector_key(self) -> str:
        """What its vectors are cached under: the model, and the arithmetic when it is not the model's own
        (`memory_core.embeddings.precision`)."""
        return self.model_name


def l2_normalise(matrix: np.ndarray, in_place: bool = False) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero); `in_place`: into a float32 `matrix` itself, for
    a corpus's whole index (no second copy of it)."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    if in_place:
        matrix /= norms
        return matrix
    return matrix / norms

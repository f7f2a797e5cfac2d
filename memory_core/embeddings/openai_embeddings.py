"""Any OpenAI-compatible `/embeddings` endpoint (OpenAI, Azure, vLLM, Ollama, LiteLLM ...) via `openai`.

Texts go in batches (the API takes up to 2048 inputs per request); retries with exponential backoff on
429 / 5xx / timeouts / connection errors are the `openai` client's own (`max_retries`), which honours
`retry-after` headers. Vectors come back in request order (sorted by `index`) and L2-normalised.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memory_core.embeddings.base import Embedder, EmbedderSpec, l2_normalise
from memory_core.settings import OPENAI_API_KEY

MAX_INPUTS_PER_REQUEST = 2048


class OpenAIEmbedder(Embedder):
    def __init__(
        self,
        model: str,
        api_key: str,
        base_url: str | None = None,
        dimensions: int | None = None,
        batch_size: int = 256,
        max_retries: int = 5,
        timeout_s: float = 60.0,
        azure_api_version: str | None = None,
        api_key_env: str = OPENAI_API_KEY.name,
    ):
        if not api_key:
            raise ValueError("OpenAIEmbedder needs an API key")
        if not 1 <= batch_size <= MAX_INPUTS_PER_REQUEST:
            raise ValueError(f"batch_size must be within 1..{MAX_INPUTS_PER_REQUEST}")
        self.model = model
        self.model_name = f"openai:{model}" + (f"@{dimensions}" if dimensions else "")
        self.dim = dimensions or 0  # known after the first response otherwise
        self.dimensions = dimensions
        self.batch_size = batch_size
        self._client_args = dict(
            api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s
        )
        self._azure_api_version = azure_api_version
        self._api_key_env = api_key_env  # recorded in the spec: where a rebuild finds the key
        self._client = None
        self.requests = 0

    def spec(self) -> EmbedderSpec:
        return EmbedderSpec(
            "openai",
            self.model_name,
            self.dim,
            model=self.model,
            dimensions=self.dimensions,
            base_url=self._client_args["base_url"],
            azure_api_version=self._azure_api_version,
            api_key_env=self._api_key_env,
        )

    def _get_client(self):
        if self._client is None:
            import openai

            if self._azure_api_version:
                args = dict(self._client_args)
                self._client = openai.AzureOpenAI(
                    api_key=args["api_key"],
                    azure_endpoint=args["base_url"],
                    api_version=self._azure_api_version,
                    max_retries=args["max_retries"],
                    timeout=args["timeout"],
                )
            else:
                self._client = openai.OpenAI(**self._client_args)
        return self._client

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        client = self._get_client()
        chunks: list[np.ndarray] = []
        for start in range(0, len(texts), self.batch_size):
            # the API rejects empty strings; a blank stands in (its vector carries no meaning either way)
            batch = [t if t.strip() else " " for t in texts[start : start + self.batch_size]]
            extra = {"dimensions": self.dimensions} if self.dimensions else {}
            response = client.embeddings.create(
                model=self.model, input=batch, encoding_format="float", **extra
            )
            self.requests += 1
            data = sorted(response.data, key=lambda d: d.index)
            if len(data) != len(batch):
                raise RuntimeError(
                    f"embeddings endpoint returned {len(data)} vectors for {len(batch)} inputs"
                )
            chunks.append(np.asarray([d.embedding for d in data], dtype=np.float32))
        if not chunks:
            return np.zeros((0, self.dim), dtype=np.float32)
        matrix = np.concatenate(chunks)
        if self.dim and matrix.shape[1] != self.dim:
            raise RuntimeError(
                f"embeddings endpoint returned {matrix.shape[1]}-d vectors, expected {self.dim}"
            )
        self.dim = int(matrix.shape[1])
        return l2_normalise(matrix)

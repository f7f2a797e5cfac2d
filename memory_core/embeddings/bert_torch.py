"""The pipeline's runtime for BERT-family sentence-transformers models (the default all-MiniLM-L6-v2): the
forward pass of `bert_numpy` written with torch's kernels, without importing sentence-transformers or
transformers. The same model and the same vectors as sentence-transformers — bit for bit in the same
batches (tested: its batching, sums, mask, attention call and normalisations are copied, because the topic
tuner's choice moves with a 1e-7 difference) — at its speed on long batches.

Why: a build waits for its model before the first stage that embeds, and `import sentence_transformers`
pulls in transformers and scikit-learn — measured on the 2-core machine, torch 2.6 s, transformers 1.2 s,
sentence-transformers 6.7-8.8 s more, the model 1.0 s: ~12 s of one core, under the GIL, that a
LongMemEval haystack's build paid at the start of its concept loop. Here the load is torch's import and a
copy of the weights (~3 s). Models this runtime cannot compute exactly (`bert_numpy.supports`) stay on the
sentence-transformers provider (`factory.build_embedder` chooses).

Precision (`precision.py`): in `float32` the vectors are sentence-transformers'; in `bfloat16` (the default
where the CPU computes it natively) each dense layer's product takes bfloat16 inputs and weights, accumulates
in float32 and is rounded to bfloat16; the biases, the attention's softmax, the layer norms, the residual sums
and the pooling are float32, and the feed-forward's hidden state stays bfloat16 through its gelu. ~1.8x fewer
core-seconds per token on the 2-core machine's AVX512-BF16; vectors within a cosine of 1e-4 of float32's.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_core.embeddings.base import l2_normalise
from memory_core.embeddings.bert_numpy import BertEncoder, BertFolderEmbedder, has_normalize_module
from memory_core.embeddings.precision import BFLOAT16, FLOAT32, precision_key, resolve_precision
from memory_core.settings import offline_model_hub

# one load at a time per process: two threads of a run (the concept loop and a prefetch) asking at once
# would each import torch and copy the weights
_LOAD = threading.Lock()


class TorchBertEncoder(BertEncoder):
    """`BertEncoder`'s tokenizer, batching and mean pooling; the layers on torch tensors."""

    def __init__(self, folder: Path, max_seq_length: int | None, threads: int, precision: str = FLOAT32):
        self.precision = precision
        super().__init__(folder, max_seq_length, threads)

    def _prepare_weights(self) -> None:
        import torch

        # copied out of the read-only memory map (torch wants writable memory): ~90 MB for MiniLM
        self.tensors = {name: torch.from_numpy(np.array(t)) for name, t in self.weights.items()}
        del self.weights
        # bfloat16: the encoder's dense weights and biases beside their float32 originals (+~20 MB); a layer
        # adds its float32 bias, except the wide one, whose output stays bfloat16 (`_linear`)
        self.dense_bf16, self.bias_bf16 = {}, {}
        if self.precision == BFLOAT16:
            for name, t in self.tensors.items():
                if name.startswith("encoder.") and name.endswith(".weight") and t.dim() == 2:
                    layer = name[: -len(".weight")]
                    self.dense_bf16[layer] = t.to(torch.bfloat16)
                    self.bias_bf16[layer] = self.tensors[f"{layer}.bias"].to(torch.bfloat16)
        # sentence-transformers normalises in the model's Normalize module, then again when asked to
        # (`normalize_embeddings`, as its provider here asks): the same two steps, for the same floats
        self.normalisations = 1 + int(has_normalize_module(self.folder))

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        """sentence-transformers' batches: texts ordered by character length, longest first (its
        `np.argsort`), so every batch pads to the same length as there and the floats agree to the bit."""
        order = np.argsort([-len(t) for t in texts])  # on the texts as given, as there
        texts = [t.lower() if self.lower_case else t for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._computing():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                encodings = self.tokenizer.encode_batch([texts[i] for i in rows])
                out[rows] = self.forward(*self._padded([e.ids for e in encodings]))
        return out

    def _computing(self) -> contextlib.AbstractContextManager:
        import torch

        return torch.inference_mode()  # torch's threads were set at load

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch
        import torch.nn.functional as F

        w, (batch, length) = self.tensors, ids.shape
        heads, size = self.heads, self.dim // self.heads
        ids_t, mask_t = torch.from_numpy(ids), torch.from_numpy(mask)
        # the sums, the mask and the attention call in transformers' order and form (its BertModel with SDPA),
        # so the floats are sentence-transformers' to the last bit: the topic tuner feels a 1e-7 difference
        x = w["embeddings.word_embeddings.weight"][ids_t] + w["embeddings.token_type_embeddings.weight"][0]
        x = x + w["embeddings.position_embeddings.weight"][:length][None]
        x = self._norm(x, "embeddings.LayerNorm")
        keys = mask_t.bool()
        masked = None if bool(keys.all()) else keys[:, None, None, :].expand(batch, 1, length, length)

        def split(h: torch.Tensor) -> torch.Tensor:
            return h.view(batch, length, heads, size).transpose(1, 2)

        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            h = self._dense_input(x)
            q = split(self._linear(h, p + "attention.self.query"))
            k = split(self._linear(h, p + "attention.self.key"))
            v = split(self._linear(h, p + "attention.self.value"))
            context = F.scaled_dot_product_attention(
                q, k, v, attn_mask=masked, dropout_p=0.0, scale=size**-0.5
            )
            context = context.transpose(1, 2).reshape(batch, length, self.dim)
            x = self._norm(
                self._linear(self._dense_input(context), p + "attention.output.dense") + x,
                p + "attention.output.LayerNorm",
            )
            # bfloat16: the feed-forward's 4x-wide hidden state stays bfloat16 through the gelu
            hidden = F.gelu(self._linear(self._dense_input(x), p + "intermediate.dense", wide=True))
            x = self._norm(self._linear(hidden, p + "output.dense") + x, p + "output.LayerNorm")
        weights = mask_t[..., None]
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        for _ in range(self.normalisations):
            pooled = F.normalize(pooled, p=2, dim=1)
        return pooled.numpy()

    def _dense_input(self, x):
        """`x` as a dense layer reads it: itself in float32, a bfloat16 copy in bfloat16."""
        import torch

        return x.to(torch.bfloat16) if self.dense_bf16 else x

    def _linear(self, x, name: str, wide: bool = False):
        """A dense layer. In bfloat16 its product (accumulated in float32, rounded to bfloat16) takes a float32
        bias, so the output is float32 (it joins a float32 residual or the attention) — except a `wide` one's,
        which stays bfloat16 for the next product."""
        import torch.nn.functional as F

        bias = self.tensors[f"{name}.bias"]
        if not self.dense_bf16:
            return F.linear(x, self.tensors[f"{name}.weight"], bias)
        if wide:
            return F.linear(x, self.dense_bf16[name], self.bias_bf16[name])
        return F.linear(x, self.dense_bf16[name]) + bias

    def _norm(self, x, name: str):
        import torch.nn.functional as F

        w = self.tensors
        return F.layer_norm(x, (self.dim,), w[f"{name}.weight"], w[f"{name}.bias"], self.eps)


@functools.lru_cache(maxsize=4)
def _encoder(folder: str, max_seq_length: int | None, threads: int, precision: str) -> TorchBertEncoder:
    """One encoder per (model folder, length, threads, precision) per process: every stage of an in-process
    run shares it."""
    offline_model_hub()  # torch's import reads the hub's variables too; the model never comes from there
    import torch

    torch.set_num_threads(threads)
    return TorchBertEncoder(Path(folder), max_seq_length, threads, precision)


class TorchBertEmbedder(BertFolderEmbedder):
    """The model on torch, CPU (the pipeline's runtime), on `threads` torch threads."""

    def __init__(
        self,
        model_path: str | None = None,
        model_name: str | None = None,
        batch_size: int = 32,
        threads: int | None = None,
        max_seq_length: int | None = None,
        precision: str | None = None,
    ):
        from memory_core.embeddings.sentence_transformer import default_threads

        super().__init__(model_path, model_name, batch_size, max_seq_length)
        self.threads = threads or default_threads()
        self.precision = resolve_precision(precision)
        self._encoder: TorchBertEncoder | None = None

    def vector_key(self) -> str:
        return precision_key(self.model_name, self.precision)

    def _load(self) -> TorchBertEncoder:
        if self._encoder is None:
            with _LOAD:
                self._encoder = _encoder(str(self.folder), self.max_seq_length, self.threads, self.precision)
        return self._encoder

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalise(self._load().encode(list(texts), self.batch_size))

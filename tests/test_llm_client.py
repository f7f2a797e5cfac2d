"""The LLM path through the real `openai` client against a real local chat-completions server: retries,
feedback on invalid answers, refusals, configuration errors, cache and cost. Nothing is patched."""

from __future__ import annotations

import json

import pytest
from pydantic import Field

from memory_core.llm.base import LLMConfigurationError, StructuredRequest, StructuredResult
from memory_core.llm.cache import CachedLLMClient, ResponseCache
from memory_core.llm.openai_client import OpenAICompatibleClient
from memory_core.llm.prices import PriceTable
from memory_core.ontology.extraction import SegmentExtraction
from memory_core.ontology.strict import StrictBase, StrictSchemaError
from tests.chat_server import ok, raw_body, refusal, slow, status

SEGMENT = '<message ref="m1" speaker="user" kind="person" time="2024-01-01 10:00">\nI am frustrated with Kyoto trains\n</message>'
KEY = "sk-test-secret-0123456789"


def client(server, **kw) -> OpenAICompatibleClient:
    opts = dict(
        api_key=KEY,
        model="gpt-4o-mini",
        base_url=server.url,
        backoff_base_s=0.01,
        timeout_s=2.0,
        max_retries=3,
    )
    opts.update(kw)
    return OpenAICompatibleClient(**opts)


def request(user: str = SEGMENT) -> StructuredRequest:
    return StructuredRequest("test/v1", "Extract.", user, SegmentExtraction)


def test_valid_answer_is_parsed_and_costed(chat_server):
    result = client(chat_server).structured(request())
    assert result.outcome == "ok" and result.attempts == 1 and not result.cache_hit
    assert result.parsed.concepts[0].evidence[0].quote == "I am frustrated"
    assert result.parsed.reactions[0].reaction.state == "Frustration"
    sent = chat_server.requests[0]
    assert sent["response_format"]["json_schema"]["strict"] is True and sent["reasoning_effort"] == "low"
    assert sent["_auth"] == f"Bearer {KEY}"
    assert result.tokens_in > 0 and result.tokens_out > 0
    assert (
        result.cost_usd
        == PriceTable.from_config(None).cost("gpt-4o-mini", result.tokens_in, result.tokens_out)
        > 0
    )


def test_rate_limit_then_success(chat_server):
    chat_server.queue = [status(429, retry_after="0"), status(429)]
    result = client(chat_server).structured(request())
    assert result.outcome == "ok" and result.attempts == 3 and len(chat_server.requests) == 3


def test_server_errors_exhaust_retries_as_transient(chat_server):
    chat_server.queue = [status(500)] * 10
    result = client(chat_server, max_retries=2).structured(request())
    assert result.outcome == "error" and result.transient and result.parsed is None
    assert result.attempts == 3 and len(chat_server.requests) == 3
    assert "HTTP 500" in result.error and KEY not in result.error


def test_timeout_is_retried(chat_server):
    chat_server.queue = [slow(1.5)]
    result = client(chat_server, timeout_s=0.4).structured(request())
    assert result.outcome == "ok" and result.attempts == 2


def test_timeouts_exhausted(chat_server):
    chat_server.queue = [slow(1.0)] * 3
    result = client(chat_server, timeout_s=0.3, max_retries=1).structured(request())
    assert result.outcome == "error" and result.transient and result.error.startswith("timeout")


def test_malformed_body_is_retried(chat_server):
    chat_server.queue = [raw_body(b"<html>bad gateway</html>")]
    result = client(chat_server).structured(request())
    assert result.outcome == "ok" and result.attempts == 2


def test_invalid_json_is_retried_once_with_the_error_fed_back(chat_server):
    chat_server.queue = [ok('{"concepts": [')]
    result = client(chat_server).structured(request())
    assert result.outcome == "ok" and result.attempts == 2
    second = chat_server.requests[1]["messages"]
    assert second[-2] == {"role": "assistant", "content": '{"concepts": ['}
    assert second[-1]["role"] == "user" and "not valid JSON" in second[-1]["content"]


def test_schema_violation_twice_becomes_invalid_with_reason(chat_server):
    bad = json.loads(
        '{"concepts": [{"title": "x", "type": "entity", "description": "", "aliases": [], "confidence": 1.5,'
        ' "evidence": [], "relations": []}], "reactions": []}'
    )
    chat_server.queue = [ok(json.dumps(bad)), ok(json.dumps({"concepts": []}))]
    result = client(chat_server).structured(request())
    assert result.outcome == "invalid" and result.parsed is None and result.attempts == 2
    assert "does not match the schema" in result.error and "reactions" in result.error
    assert result.raw == json.dumps({"concepts": []}) and not result.transient
    assert "confidence" in chat_server.requests[1]["messages"][-1]["content"]


def test_reaction_rule_violation_is_a_validation_error(chat_server):
    answer = {
        "concepts": [],
        "reactions": [
            {
                "reaction": {
                    "state": "Joy",
                    "state_raw": "glee",
                    "intensity": 0.5,
                    "valence": "positive",
                    "epistemic_status": "explicit",
                    "evidence_message_id": "m1",
                },
                "cue": "glee",
            }
        ],
    }
    chat_server.queue = [ok(json.dumps(answer)), ok(json.dumps(answer))]
    result = client(chat_server).structured(request())
    assert result.outcome == "invalid" and "state_raw must be empty" in result.error


def test_refusal(chat_server):
    chat_server.queue = [refusal("No.")]
    result = client(chat_server).structured(request())
    assert result.outcome == "refused" and "No." in result.error and result.attempts == 1


def test_rejected_key_is_a_configuration_error_without_the_key(chat_server):
    chat_server.queue = [status(401, message="Incorrect API key provided: sk-test-secret-0123456789")]
    with pytest.raises(LLMConfigurationError) as err:
        client(chat_server).structured(request())
    assert KEY not in str(err.value) and "HTTP 401" in str(err.value)


def test_reasoning_effort_dropped_when_the_model_refuses_it(chat_server):
    chat_server.queue = [
        status(400, message="Unsupported parameter: 'reasoning_effort' is not supported with this model.")
    ]
    c = client(chat_server)
    result = c.structured(request())
    assert result.outcome == "ok" and result.notes.get("reasoning_effort_dropped")
    assert "reasoning_effort" not in chat_server.requests[1] and c.reasoning_effort is None


def test_other_bad_request_is_a_final_error(chat_server):
    chat_server.queue = [status(400, message="context length exceeded")]
    result = client(chat_server).structured(request())
    assert result.outcome == "error" and not result.transient and "context length" in result.error


def test_errors_mask_the_key_where_it_appears_whole_and_never_parts_of_words(chat_server):
    from memory_core.llm.scrub import scrub

    chat_server.queue = [status(400, message=f"Extra data: bad key {KEY}; Bearer {KEY}.")]
    result = client(chat_server).structured(request())
    assert result.error == "bad request (HTTP 400): Extra data: bad key ***; Bearer ***."
    # a "key" too short to be one is never looked for: the "Extra" → "E***tra"
    chat_server.queue = [status(400, message="Extra data in the answer")]
    assert "Extra data in the answer" in client(chat_server, api_key="x").structured(request()).error
    assert scrub("passwords and password", "password") == "passwords and ***"
    assert scrub("token=sk-test-secret-0123456789&x", KEY) == "token=***&x"


def test_non_strict_model_is_never_sent(chat_server):
    class Loose(StrictBase):
        note: str = Field(default="")

    with pytest.raises(StrictSchemaError):
        client(chat_server).structured(StructuredRequest("t/v1", "s", "u", Loose))
    assert chat_server.requests == []


def test_cache_hit_costs_nothing_and_transient_failures_are_not_cached(chat_server, tmp_path):
    cache = ResponseCache.in_dir(tmp_path)
    cached = CachedLLMClient(client(chat_server, max_retries=0), cache)
    chat_server.queue = [status(503)]
    first = cached.structured(request())
    assert first.outcome == "error" and cache.count() == 0
    second = cached.structured(request())
    assert second.outcome == "ok" and not second.cache_hit and cache.count() == 1
    third = cached.structured(request())
    assert (
        third.cache_hit
        and third.outcome == "ok"
        and third.attempts == 0
        and third.cost_usd == 0
        and third.tokens_in == 0
    )
    assert third.parsed == second.parsed and len(chat_server.requests) == 2
    # another model, prompt or input is another key
    other = CachedLLMClient(client(chat_server, model="gpt-4.1-mini"), cache).structured(request())
    assert not other.cache_hit and len(chat_server.requests) == 3
    assert cached.structured(request(SEGMENT.replace("Kyoto", "Osaka"))).cache_hit is False


def test_only_valid_answers_are_cached_an_invalid_one_is_asked_again(chat_server, tmp_path):
    """Two schema violations in a row can be chance: caching them would make one bad draw permanent."""
    cache = ResponseCache.in_dir(tmp_path)
    cached = CachedLLMClient(client(chat_server), cache)
    chat_server.queue = [ok("nope"), ok("still nope"), refusal("no")]
    first = cached.structured(request())
    assert first.outcome == "invalid" and cache.count() == 0
    refused = cached.structured(request())
    assert refused.outcome == "refused" and not refused.cache_hit and cache.count() == 0
    again = cached.structured(request())  # the scripted server now answers validly
    assert again.outcome == "ok" and not again.cache_hit and cache.count() == 1
    assert cached.structured(request()).cache_hit and len(chat_server.requests) == 4
    # an invalid answer an older version cached is a miss, not a verdict
    stale = StructuredResult(model="gpt-4o-mini", outcome="invalid", parsed=None, raw="nope", error="bad")
    stale.cache_key = request("stale input").cache_key("gpt-4o-mini")
    cache.put(stale)
    assert cached.structured(request("stale input")).outcome == "ok" and len(chat_server.requests) == 5


def test_gold_scorer_runs_the_llm_teacher_through_the_same_path(chat_server, tmp_path):
    from evals.extraction_scoring import score_teacher
    from evals.gold import load_extraction_gold
    from memory_core.extraction.teacher import LLMTeacher

    gold = load_extraction_gold()[:6]
    teacher = LLMTeacher(CachedLLMClient(client(chat_server), ResponseCache.in_dir(tmp_path)))
    report = score_teacher(teacher, gold)
    assert report["teacher"]["teacher"] == "gpt-4o-mini" and report["teacher_failures"] == []
    # the scripted server quotes each person message's first three words as an entity
    assert report["spans"]["pred"] == sum(1 for g in gold if g.role == "user")
    assert len(chat_server.requests) == 6
    assert (
        score_teacher(teacher, gold)["spans"] == report["spans"] and len(chat_server.requests) == 6
    )  # cached


def test_connection_refused_is_retried_then_transient():
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = OpenAICompatibleClient(
        api_key=KEY,
        model="gpt-4o-mini",
        base_url=f"http://127.0.0.1:{port}/v1",
        backoff_base_s=0.01,
        max_retries=2,
    )
    result = c.structured(request())
    assert result.outcome == "error" and result.transient and result.attempts == 3
    assert result.error.startswith("connection error")


def test_resource_picks_the_teacher_at_run_start(monkeypatch, tmp_path, chat_server):
    from memory_core.store.db import MemoryHome
    from memory_resources.llm import LLMResource

    home = MemoryHome.resolve(tmp_path)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    assert LLMResource().build_teacher(home).describe()["teacher"] == "offline"
    with pytest.raises(LLMConfigurationError, match="no API key"):
        LLMResource(teacher="openai").build_teacher(home)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", chat_server.url)
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4.1-mini")
    teacher = LLMResource().build_teacher(home)
    described = teacher.describe()
    assert described["teacher"] == "gpt-4.1-mini" and described["base_url"] == chat_server.url
    assert KEY not in str(described)
    assert LLMResource(teacher="offline").build_teacher(home).describe()["teacher"] == "offline"


@pytest.mark.parametrize("dialect, response_format", [("openai", "json_schema"), ("llama_cpp", "json_object")])
def test_the_response_format_setting_speaks_each_endpoints_dialect(chat_server, dialect, response_format):
    """json_schema for OpenAI/Azure/vLLM; json_object + schema for llama.cpp's server, which refuses
    json_schema with a 500: each setting gets a valid answer from its endpoint, and the same strict schema
    is sent either way."""
    chat_server.dialect = dialect
    result = client(chat_server, response_format=response_format).structured(request())
    assert result.outcome == "ok" and result.attempts == 1, result.error
    assert result.parsed.concepts[0].evidence[0].quote == "I am frustrated"
    sent = chat_server.requests[0]["response_format"]
    schema = SegmentExtraction.model_json_schema()
    if response_format == "json_object":
        assert sent["type"] == "json_object" and set(sent["schema"]["properties"]) == set(schema["properties"])
    else:
        assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True


def test_the_wrong_response_format_for_an_endpoint_fails_with_its_error(chat_server):
    """json_schema against llama.cpp's server: its 500 is retried and then reported, never parsed."""
    chat_server.dialect = "llama_cpp"
    result = client(chat_server, max_retries=1).structured(request())
    assert result.outcome == "error" and "json_object" in result.error
    assert all(r["response_format"]["type"] == "json_schema" for r in chat_server.requests)


def test_the_llm_settings_choose_the_response_format(chat_server, tmp_path):
    from memory_core.llm.factory import LLMSettings, build_llm_client

    chat_server.dialect = "llama_cpp"
    settings = LLMSettings(
        teacher="openai", api_key=KEY, base_url=chat_server.url, model="smollm2", response_format="json_object"
    )
    llm = build_llm_client(settings, tmp_path)
    assert llm.describe()["response_format"] == "json_object"
    assert llm.structured(request()).outcome == "ok"
    with pytest.raises(LLMConfigurationError, match="response_format"):
        build_llm_client(LLMSettings(teacher="openai", api_key=KEY, response_format="xml"), tmp_path)

"""Strict tool calls through the real `openai` client against the local chat-completions server: a request
with tools is answered by a tool call that builds the response model; wrong arguments are fed back as the
tool's result; the cached answer is the response model's JSON; an endpoint without tool calls gets the strict
response format."""

from __future__ import annotations

import json

from memory_core.llm.base import StructuredRequest
from memory_core.llm.cache import CachedLLMClient, ResponseCache
from memory_core.llm.openai_client import OpenAICompatibleClient
from memory_query.agent.prompts import SCOUT_TOOL_CALLS, ScoutOut
from tests.chat_server import Reply


def request() -> StructuredRequest:
    return StructuredRequest(
        "test-tools/v1", "Choose a tool.", "Find the half marathon date.", ScoutOut, SCOUT_TOOL_CALLS
    )


def client(server) -> OpenAICompatibleClient:
    return OpenAICompatibleClient(
        api_key="sk-tools", model="gpt-4o-mini", base_url=server.url, backoff_base_s=0.01
    )


SEARCH = {"reasoning": "look it up", "sub_question": "main", "query": "half marathon", "in_time_range": False}


def test_a_tool_call_builds_the_response_model_and_bad_arguments_are_fed_back(chat_server, tmp_path):
    chat_server.queue = [
        lambda req: Reply(tool_call=("smart_search", {"query": "half marathon"})),  # arguments missing
        lambda req: Reply(tool_call=("smart_search", SEARCH)),
    ]
    cached = CachedLLMClient(client(chat_server), ResponseCache.in_dir(tmp_path))
    result = cached.structured(request())
    assert result.outcome == "ok" and result.attempts == 2
    assert result.parsed.tool == "smart_search" and result.parsed.query == "half marathon"
    assert result.parsed.message_ids == [] and result.notes["tool_call"] == "smart_search"
    first, second = chat_server.requests
    assert first["tool_choice"] == "required" and "response_format" not in first
    assert all(t["function"]["strict"] for t in first["tools"])
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and "arguments of smart_search are wrong" in tool_reply["content"]
    assert (
        json.loads(result.raw)["tool"] == "smart_search"
    )  # the response model's JSON, whichever way it came
    hit = cached.structured(request())
    assert hit.cache_hit and hit.parsed == result.parsed and len(chat_server.requests) == 2


def test_an_endpoint_without_tool_calls_is_asked_for_the_response_format(chat_server):
    chat_server.tools_supported = False
    answer = ScoutOut.from_tool_call("smart_search", SCOUT_TOOL_CALLS[0][1](**SEARCH))
    chat_server.queue = [lambda req: Reply(), lambda req: Reply(content=answer.model_dump_json())]
    llm = client(chat_server)
    result = llm.structured(request())
    assert result.outcome == "ok" and result.parsed == answer and result.notes["tools_dropped"]
    refused, answered = chat_server.requests
    assert "tools" in refused and answered["response_format"]["json_schema"]["name"] == "ScoutOut"
    assert llm.tools_supported is False  # the next request goes without tools at once
    chat_server.queue = [lambda req: Reply(content=answer.model_dump_json())]
    assert llm.structured(request()).ok and "tools" not in chat_server.requests[-1]

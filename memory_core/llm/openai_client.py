"""Any OpenAI-compatible chat-completions endpoint through the `openai` package (OpenAI, Azure OpenAI, vLLM,
llama.cpp server, LiteLLM, ...), with strict structured outputs.

Retries live here, not in the SDK (its own retries are off), so every HTTP attempt is counted:
- 429, 408/409, 5xx, timeouts and connection errors: exponential backoff with jitter (Retry-After honoured,
  capped), up to `max_retries` retries; then the call ends `error` + `transient`.
- an answer that is not JSON or fails the response model: retried once with the validation error fed back
  in the conversation; then `invalid` with the reason. A refusal ends `refused`.
- a 400 naming `reasoning_effort` (a non-reasoning model): the parameter is dropped for this client and the
  request repeated.
- a request with tools (`StructuredRequest.tools`) is sent as strict function calling (exactly one call);
  a 400 naming tools or functions (an endpoint without tool calls) switches this client to the strict
  response format for good, and the request is repeated that way.
- 401/403/404: `LLMConfigurationError`, because every further call would fail the same way.

The response format is configuration (`response_format`): `json_schema` — OpenAI's strict structured
outputs, what OpenAI, Azure OpenAI and vLLM take — or `json_object`, the same schema sent as
`{"type": "json_object", "schema": …}`, what llama.cpp's Python server (`llama_cpp.server`) takes and
enforces as a grammar (it refuses `json_schema` with HTTP 500). Either way the answer is validated against
the strict response model here. With `json_object` no tools are sent (that server has no strict function
calling): the same schema comes back as the answer instead, and the output cap is sent as `max_tokens`.
"""

from __future__ import annotations

import random
import re
import threading
import time
from typing import Any

from memory_core.llm.base import (
    LLMClient,
    LLMConfigurationError,
    StructuredRequest,
    StructuredResult,
    T,
    parse_answer,
)
from memory_core.llm.prices import PriceTable
from memory_core.llm.scrub import scrub

RETRYABLE_STATUS = {408, 409, 429}
RESPONSE_FORMATS = ("json_schema", "json_object")
MAX_BACKOFF_S = 30.0


class OpenAICompatibleClient(LLMClient):
    def __init__(
        self,
        *,
        api_key: str,
        model: str,
        base_url: str | None = None,
        azure_api_version: str | None = None,
        reasoning_effort: str | None = "low",
        timeout_s: float = 60.0,
        max_retries: int = 4,
        backoff_base_s: float = 1.0,
        validation_retries: int = 1,
        max_output_tokens: int | None = 4096,
        prices: PriceTable | None = None,
        response_format: str = "json_schema",
        sleep=time.sleep,
    ):
        if not api_key:
            raise LLMConfigurationError("no API key for the OpenAI-compatible client")
        if response_format not in RESPONSE_FORMATS:
            raise LLMConfigurationError(
                f"unknown response_format {response_format!r}: use {' or '.join(RESPONSE_FORMATS)}"
            )
        self.response_format = response_format
        self.model = model
        self._api_key = api_key
        self.base_url = base_url or None
        self.azure_api_version = azure_api_version or None
        self.reasoning_effort = reasoning_effort or None
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.validation_retries = validation_retries
        self.max_output_tokens = max_output_tokens
        self.prices = prices or PriceTable.from_config(None)
        self._sleep = sleep
        # until the endpoint rejects a request with tools; never with json_object (no strict functions there)
        self.tools_supported = response_format == "json_schema"
        self._client: Any = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------------------------------ setup
    def _sdk(self):
        with self._lock:
            if self._client is None:
                import openai  # heavy SDK: imported when the first call is made

                if self.azure_api_version:
                    if not self.base_url:
                        raise LLMConfigurationError("Azure OpenAI needs base_url (the resource endpoint)")
                    self._client = openai.AzureOpenAI(
                        api_key=self._api_key,
                        azure_endpoint=self.base_url,
                        api_version=self.azure_api_version,
                        timeout=self.timeout_s,
                        max_retries=0,
                    )
                else:
                    self._client = openai.OpenAI(
                        api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
                    )
            return self._client

    def describe(self) -> dict:
        return {
            "model": self.model,
            "base_url": self.base_url or "https://api.openai.com/v1",
            "azure_api_version": self.azure_api_version or "",
            "reasoning_effort": self.reasoning_effort or "",
            "response_format": self.response_format,
        }

    def _scrub(self, text: str) -> str:
        return scrub(text, self._api_key)

    # ------------------------------------------------------------------------------------------ calls
    def structured(self, request: StructuredRequest[T]) -> StructuredResult[T]:
        schema = request.schema  # raises StrictSchemaError before anything is sent
        response_format = response_format_payload(
            self.response_format, request.response_model.__name__, schema
        )
        payload: dict[str, Any] = {"response_format": response_format}
        if request.tools and self.tools_supported:
            payload = {"tools": request.tool_specs(), "tool_choice": "required", "parallel_tool_calls": False}
        messages: list[dict] = [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ]
        result: StructuredResult[T] = StructuredResult(
            model=self.model,
            outcome="error",
            parsed=None,
            raw="",
            cache_key=request.cache_key(self.model),
            prompt_sha256=request.prompt_sha256,
            schema_sha256=request.schema_sha256,
            input_sha256=request.input_sha256,
        )
        started = time.perf_counter()
        feedback_left = self.validation_retries
        try:
            while True:
                completion = self._create(messages, payload, result, {"response_format": response_format})
                if completion is None:  # transport failure after retries; result says why
                    break
                choice = completion.choices[0] if completion.choices else None
                message = choice.message if choice else None
                result.raw = (message.content or "") if message else ""
                refusal = getattr(message, "refusal", None) if message else None
                if refusal:
                    result.outcome, result.error = "refused", f"the model refused: {refusal}"[:1000]
                    break
                if choice is not None and choice.finish_reason == "length":
                    problem = "the answer was cut off at the output token limit (finish_reason=length)"
                    parsed, feedback = None, _json_feedback(result.raw, problem)
                else:
                    parsed, problem, feedback = self._read(request, message, "tools" in payload, result)
                if parsed is not None:
                    result.outcome, result.parsed, result.error = "ok", parsed, ""
                    break
                result.outcome, result.error = "invalid", problem
                if feedback_left <= 0:
                    break
                feedback_left -= 1
                messages = [*messages, *feedback]
        finally:
            result.latency_ms = round((time.perf_counter() - started) * 1000, 1)
            result.cost_usd = self.prices.cost(self.model, result.tokens_in, result.tokens_out)
            if self.prices.price(self.model) is None:
                result.notes["price_unknown"] = True
            result.error = self._scrub(result.error)
        return result

    @staticmethod
    def _read(request: StructuredRequest[T], message, with_tools: bool, result: StructuredResult):
        """(parsed, problem, the messages that feed the problem back) of one answer."""
        calls = (getattr(message, "tool_calls", None) or []) if with_tools and message else []
        if not calls:
            parsed, problem = parse_answer(result.raw, request.response_model)
            if with_tools and parsed is None:
                problem = f"no tool was called ({problem})"
            return parsed, problem, _json_feedback(result.raw, problem)
        call = calls[0]
        parsed, problem = request.parse_tool_call(call.function.name, call.function.arguments)
        # the raw answer is the response model's JSON, whichever way it came: a cache hit parses it the same
        result.raw = parsed.model_dump_json() if parsed is not None else call.function.arguments or ""
        result.notes["tool_call"] = call.function.name
        feedback = [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.function.name, "arguments": call.function.arguments},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call.id,
                "content": f"Rejected: {problem}. Call one tool again with arguments that satisfy its schema.",
            },
        ]
        return parsed, problem, feedback

    def _create(self, messages: list[dict], payload: dict, result: StructuredResult, fallback: dict):
        """One completion with transport retries; None (and `result` filled) when they are exhausted. An
        endpoint that rejects tool calls gets `fallback` (the strict response format) instead, from now on
        (`payload` is changed in place, so the caller knows which was answered)."""
        import openai

        retries = 0
        while True:
            kwargs: dict[str, Any] = dict(model=self.model, messages=messages, **payload)
            if self.reasoning_effort:
                kwargs["reasoning_effort"] = self.reasoning_effort
            if self.max_output_tokens:  # llama.cpp's server knows only the older name
                cap = "max_tokens" if self.response_format == "json_object" else "max_completion_tokens"
                kwargs[cap] = self.max_output_tokens
            result.attempts += 1
            try:
                completion = self._sdk().chat.completions.create(**kwargs)
            except openai.BadRequestError as exc:
                if self.reasoning_effort and "reasoning_effort" in str(exc):
                    self.reasoning_effort = None  # a non-reasoning model: ask again without it
                    result.notes["reasoning_effort_dropped"] = True
                    continue
                if "tools" in payload and re.search(r"\btool|function", _api_message(exc), re.I):
                    self.tools_supported = False  # no tool calls here: the strict response format instead
                    result.notes["tools_dropped"] = True
                    payload.clear()
                    payload.update(fallback)
                    messages[:] = messages[:2]  # a tool-call exchange cannot be replayed without tools
                    continue
                result.outcome, result.transient = "error", False
                result.error = f"bad request (HTTP 400): {self._scrub(_api_message(exc))}"[:1000]
                return None
            except (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError) as exc:
                raise LLMConfigurationError(
                    f"the endpoint refused the call (HTTP {exc.status_code}): {self._scrub(_api_message(exc))}; "
                    f"check the API key, base_url and model {self.model!r}"
                ) from None
            except (openai.APIError, ValueError) as exc:
                # timeouts, connection errors, 408/409/429/5xx, and bodies that are not a completion at all
                status = getattr(exc, "status_code", None)
                retryable = status is None or status in RETRYABLE_STATUS or status >= 500
                kind = _failure_kind(exc, status)
                if not retryable or retries >= self.max_retries:
                    result.outcome, result.transient = "error", retryable
                    suffix = f" after {result.attempts} attempts" if retryable else ""
                    result.error = f"{kind}{suffix}: {self._scrub(_api_message(exc))}"[:1000]
                    return None
                self._sleep(self._backoff(retries, exc))
                retries += 1
                continue
            usage = getattr(completion, "usage", None)
            if usage is not None:
                result.tokens_in += int(getattr(usage, "prompt_tokens", 0) or 0)
                result.tokens_out += int(getattr(usage, "completion_tokens", 0) or 0)
            return completion

    def _backoff(self, retries: int, exc: Exception) -> float:
        delay = self.backoff_base_s * (2**retries) * (0.5 + random.random() / 2)
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                delay = max(delay, float(header))
            except ValueError:  # an HTTP-date Retry-After: the computed backoff stands
                pass
        return min(delay, MAX_BACKOFF_S)


def response_format_payload(kind: str, name: str, schema: dict) -> dict:
    """The `response_format` of a request for a strict schema, in the dialect the endpoint speaks."""
    if kind == "json_object":  # llama.cpp's server: the schema becomes its decoding grammar
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}


def _json_feedback(raw: str, problem: str) -> list[dict]:
    return [
        {"role": "assistant", "content": raw},
        {
            "role": "user",
            "content": f"Your answer was rejected: {problem}. Answer again with one JSON object "
            "that satisfies the schema exactly; copy quotes verbatim from the messages.",
        },
    ]


def _failure_kind(exc: Exception, status: int | None) -> str:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return "timeout"
    if isinstance(exc, openai.APIConnectionError):
        return "connection error"
    if status == 429:
        return "rate limited (HTTP 429)"
    if status is None:
        return "malformed response"
    return f"HTTP {status}"


def _api_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(exc)

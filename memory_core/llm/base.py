"""The LLM capability: one structured call with a strict Pydantic response model → the parsed model + usage.

A call never raises for a bad answer or an unavailable service: it returns a `StructuredResult` whose
`outcome` says what happened (`ok`, `invalid` after the feedback retry, `refused`, `error`) and whether the
failure is `transient` (worth trying again in a later run). Only a configuration problem that would fail
every call (a rejected key, an unknown model) raises `LLMConfigurationError`.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Generic, Literal, TypeVar

from pydantic import BaseModel

from memory_core.errors import MemoryOSError
from memory_core.ids import sha256_json, sha256_text
from memory_core.ontology.strict import assert_strict_schema

T = TypeVar("T", bound=BaseModel)
Outcome = Literal["ok", "invalid", "refused", "error"]


class LLMConfigurationError(MemoryOSError):
    """The endpoint refuses every call (bad key, unknown model or deployment): stop instead of retrying."""


@dataclass(frozen=True)
class StructuredRequest(Generic[T]):
    """One call: a versioned prompt (system text), the input (user text) and the response model.

    `tools` (name, strict arguments model) pairs let an endpoint that supports tool calls answer by calling
    one of them (strict function calling, exactly one call); the response model then builds itself from the
    call (`response_model.from_tool_call(name, arguments)`), so the parsed answer — and the cached raw answer,
    the response model's JSON — is the same in both modes. An endpoint without tool calls gets the response
    model as a strict `response_format`."""

    prompt_id: str  # name/version of the prompt template, part of the cache key
    system: str
    user: str
    response_model: type[T]
    tools: tuple[tuple[str, type[BaseModel]], ...] = ()

    def __post_init__(self) -> None:
        if self.tools and not callable(getattr(self.response_model, "from_tool_call", None)):
            raise TypeError(
                f"{self.response_model.__name__} cannot be built from a tool call (no from_tool_call)"
            )

    @property
    def prompt_sha256(self) -> str:
        return sha256_text(self.prompt_id + "\x1f" + self.system)

    @property
    def input_sha256(self) -> str:
        return sha256_text(self.user)

    @property
    def schema(self) -> dict:
        return assert_strict_schema(self.response_model)

    @property
    def schema_sha256(self) -> str:
        if not self.tools:
            return sha256_json(self.schema)
        return sha256_json([self.schema, [[name, assert_strict_schema(model)] for name, model in self.tools]])

    def tool_specs(self) -> list[dict]:
        """The tools as the chat-completions API takes them (strict function schemas)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": " ".join((model.__doc__ or name).split()),
                    "parameters": assert_strict_schema(model),
                    "strict": True,
                },
            }
            for name, model in self.tools
        ]

    def parse_tool_call(self, name: str, arguments: str) -> tuple[T | None, str]:
        """(the response model built from a tool call, "") or (None, the problem in a sentence)."""
        model = dict(self.tools).get(name)
        if model is None:
            return None, f"there is no tool {name!r}; call one of {', '.join(n for n, _ in self.tools)}"
        args, problem = parse_answer(arguments or "{}", model)
        if args is None:
            return None, f"the arguments of {name} are wrong: {problem}"
        try:
            return self.response_model.from_tool_call(name, args), ""
        except Exception as exc:  # a model validator refusing the combination
            return None, f"the call to {name} cannot be used: {_short_validation_error(exc)}"

    def cache_key(self, model: str) -> str:
        return sha256_json([model, self.prompt_sha256, self.schema_sha256, self.input_sha256])


@dataclass
class StructuredResult(Generic[T]):
    model: str
    outcome: Outcome
    parsed: T | None
    raw: str  # the last answer text as received ("" when none arrived)
    error: str = ""  # why it is not ok (never contains a secret)
    transient: bool = False  # an availability failure: a later run should try again
    tokens_in: int = 0
    tokens_out: int = 0
    latency_ms: float = 0.0
    cost_usd: float = 0.0
    attempts: int = 0  # HTTP requests made (0 on a cache hit)
    cache_hit: bool = False
    cache_key: str = ""
    prompt_sha256: str = ""
    schema_sha256: str = ""
    input_sha256: str = ""
    notes: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.outcome == "ok" and self.parsed is not None


class LLMClient(ABC):
    """An endpoint that answers structured calls."""

    model: str

    @abstractmethod
    def structured(self, request: StructuredRequest[T]) -> StructuredResult[T]:
        """Answer `request` with an instance of its response model, or say why not."""

    def describe(self) -> dict:
        """What the client is, for metadata (never secrets)."""
        return {"model": self.model}


def parse_answer(raw: str, response_model: type[T]) -> tuple[T | None, str]:
    """(parsed model, "") or (None, the validation problem in a sentence a model can act on)."""
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        return None, f"the answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    try:
        return response_model.model_validate(value), ""
    except Exception as exc:  # pydantic.ValidationError, or a model validator's ValueError
        return None, f"the answer does not match the schema: {_short_validation_error(exc)}"


def _short_validation_error(exc: Exception) -> str:
    errors = getattr(exc, "errors", None)
    if callable(errors):
        parts = []
        for err in errors()[:8]:
            loc = ".".join(str(p) for p in err.get("loc", ()))
            parts.append(f"{loc or '<root>'}: {err.get('msg', '')}")
        return "; ".join(parts)
    return str(exc)[:500]

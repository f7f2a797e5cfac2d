"""The LLM resource: the configuration of the strict LLM client (built by `memory_core.llm.factory`, the
same factory the command line and eval scripts use), and the teacher extraction uses.

`teacher="auto"` (default): the OpenAI-compatible client when an API key exists — the configured `api_key`
(use `dg.EnvVar`) or, resolved when a run starts, the `OPENAI_API_KEY` environment variable, with
`OPENAI_BASE_URL` / `OPENAI_MODEL` as defaults for the endpoint and model — else the offline teacher.
`teacher="offline"` forces the offline teacher; `teacher="openai"` requires a key. Either way the assets
see a `Teacher` and take the same code path after this boundary. The key never reaches metadata or logs.
"""

from __future__ import annotations

from dataclasses import fields

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.extraction.offline_teacher import OfflineTeacher
from memory_core.extraction.teacher import LLMTeacher, Teacher
from memory_core.llm.base import LLMClient
from memory_core.llm.factory import LLMSettings, build_llm_client
from memory_core.nlp import LanguageParser
from memory_core.store.db import MemoryHome

_DEFAULTS = LLMSettings()


class LLMResource(ConfigurableResource):
    teacher: str = Field(
        default=_DEFAULTS.teacher, description="auto (LLM when a key exists, else offline) | offline | openai"
    )
    api_key: str | None = Field(
        default=None, description="API key (use EnvVar); default: $OPENAI_API_KEY at run start"
    )
    base_url: str | None = Field(
        default=None, description="OpenAI-compatible base URL (Azure: the endpoint); default $OPENAI_BASE_URL"
    )
    azure_api_version: str | None = Field(
        default=None, description="set for Azure OpenAI (then `model` is the deployment)"
    )
    model: str | None = Field(
        default=None, description="model or deployment; default $OPENAI_MODEL, else gpt-4o-mini"
    )
    reasoning_effort: str = Field(
        default=_DEFAULTS.reasoning_effort,
        description="low | medium | high; '' to omit (dropped automatically if refused)",
    )
    timeout_s: float = Field(default=_DEFAULTS.timeout_s, description="per-request timeout in seconds")
    max_retries: int = Field(
        default=_DEFAULTS.max_retries, description="retries on 429 / 5xx / timeouts / connection errors"
    )
    backoff_base_s: float = Field(
        default=_DEFAULTS.backoff_base_s,
        description="first backoff delay; doubles per retry (Retry-After wins)",
    )
    prices: dict[str, list[float]] = Field(
        default_factory=dict,
        description="model → [input, output] USD per million tokens (merged over the defaults)",
    )
    use_cache: bool = Field(
        default=_DEFAULTS.use_cache, description="persistent response cache under <memory home>/cache/llm"
    )
    response_format: str = Field(
        default=_DEFAULTS.response_format,
        description="json_schema (strict structured outputs: OpenAI, Azure, vLLM) | json_object (the schema "
        "as {type: json_object, schema}: llama.cpp's server, grammar-enforced)",
    )
    max_output_tokens: int = Field(
        default=_DEFAULTS.max_output_tokens, description="output tokens per answer"
    )

    def settings(self) -> LLMSettings:
        return LLMSettings(**{f.name: getattr(self, f.name) for f in fields(LLMSettings)})

    def teacher_kind(self) -> str:
        """offline | openai, as this run would use."""
        return self.settings().kind()

    def build_teacher(self, home: MemoryHome, parser: LanguageParser | None = None) -> Teacher:
        """The LLM teacher when an LLM is configured, else the offline teacher reading with `parser` (the
        `nlp` resource's; default: the pinned English pipeline without a persistent cache)."""
        client = self.build_client(home)
        return OfflineTeacher(parser) if client is None else LLMTeacher(client)

    def build_client(self, home: MemoryHome) -> LLMClient | None:
        """The strict, cached LLM client when an LLM is configured (see `teacher_kind`), else None: the
        stages that use an LLM optionally (gardener triage review, Phase 1 chooser) then stay offline."""
        return build_llm_client(self.settings(), home.cache_dir)

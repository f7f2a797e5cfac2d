"""The LLM resource: which teacher extraction uses, and the strict client other stages may use.

`teacher="auto"` (default): the OpenAI-compatible client when an API key exists — the configured `api_key`
(use `dg.EnvVar`) or, resolved when a run starts, the `OPENAI_API_KEY` environment variable, with
`OPENAI_BASE_URL` / `OPENAI_MODEL` as defaults for the endpoint and model — else the offline teacher.
`teacher="offline"` forces the offline teacher; `teacher="openai"` requires a key. Either way the assets
see a `Teacher` and take the same code path after this boundary. The key never reaches metadata or logs.
"""

from __future__ import annotations

import os

from dagster import ConfigurableResource
from pydantic import Field

from memory_core.extraction.offline_teacher import OfflineTeacher
from memory_core.extraction.teacher import LLMTeacher, Teacher
from memory_core.llm.base import LLMClient, LLMConfigurationError
from memory_core.llm.cache import CachedLLMClient, ResponseCache
from memory_core.llm.openai_client import OpenAICompatibleClient
from memory_core.llm.prices import PriceTable
from memory_core.store.db import MemoryHome

DEFAULT_MODEL = "gpt-4o-mini"


class LLMResource(ConfigurableResource):
    teacher: str = Field(
        default="auto", description="auto (LLM when a key exists, else offline) | offline | openai"
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
        default=None, description=f"model or deployment; default $OPENAI_MODEL or {DEFAULT_MODEL}"
    )
    reasoning_effort: str = Field(
        default="low", description="low | medium | high; '' to omit (dropped automatically if refused)"
    )
    timeout_s: float = Field(default=60.0, description="per-request timeout in seconds")
    max_retries: int = Field(default=4, description="retries on 429 / 5xx / timeouts / connection errors")
    backoff_base_s: float = Field(
        default=1.0, description="first backoff delay; doubles per retry (Retry-After wins)"
    )
    prices: dict[str, list[float]] = Field(
        default_factory=dict,
        description="model → [input, output] USD per million tokens (merged over the defaults)",
    )
    use_cache: bool = Field(
        default=True, description="persistent response cache under <memory home>/cache/llm"
    )

    def _key(self) -> str | None:
        return self.api_key or os.environ.get("OPENAI_API_KEY") or None

    def teacher_kind(self) -> str:
        """offline | openai, as this run would use."""
        if self.teacher not in ("auto", "offline", "openai"):
            raise LLMConfigurationError(f"unknown teacher {self.teacher!r}: use auto, offline or openai")
        if self.teacher == "offline":
            return "offline"
        if self._key():
            return "openai"
        if self.teacher == "openai":
            raise LLMConfigurationError("teacher=openai but no API key: set api_key or OPENAI_API_KEY")
        return "offline"

    def build_teacher(self, home: MemoryHome) -> Teacher:
        client = self.build_client(home)
        return OfflineTeacher() if client is None else LLMTeacher(client)

    def build_client(self, home: MemoryHome) -> LLMClient | None:
        """The strict, cached LLM client when an LLM is configured (see `teacher_kind`), else None: the
        stages that use an LLM optionally (gardener triage review, Phase 1 chooser) then stay offline."""
        if self.teacher_kind() == "offline":
            return None
        client = OpenAICompatibleClient(
            api_key=self._key() or "",
            model=self.model or os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL,
            base_url=self.base_url or os.environ.get("OPENAI_BASE_URL") or None,
            azure_api_version=self.azure_api_version,
            reasoning_effort=self.reasoning_effort or None,
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s,
            prices=PriceTable.from_config(self.prices),
        )
        return CachedLLMClient(client, ResponseCache.in_dir(home.cache_dir)) if self.use_cache else client

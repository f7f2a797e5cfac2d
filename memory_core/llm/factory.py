"""The one way to build the strict LLM client: from `LLMSettings` — the `llm` resource's configuration in a
run, the same settings from the command line or an eval script outside one. Unset fields fall back to the
OPENAI_* variables (`memory_core.settings`), read when the client is built, never at import; the key never
reaches metadata or logs. No key (or `teacher="offline"`) means no client: the optional LLM stages then stay
offline and extraction uses the offline teacher.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from memory_core.llm.base import LLMClient, LLMConfigurationError
from memory_core.llm.cache import CachedLLMClient, ResponseCache
from memory_core.llm.prices import PriceTable
from memory_core.settings import OpenAIEndpoint

TEACHERS = ("auto", "offline", "openai")


@dataclass(frozen=True)
class LLMSettings:
    teacher: str = (
        "auto"  # auto (the LLM when a key exists, else offline) | offline | openai (a key required)
    )
    api_key: str | None = None  # default: $OPENAI_API_KEY when the client is built
    base_url: str | None = None  # OpenAI-compatible base URL (Azure: the endpoint); default $OPENAI_BASE_URL
    azure_api_version: str | None = None  # set for Azure OpenAI (then `model` is the deployment)
    model: str | None = None  # default $OPENAI_MODEL, else gpt-4o-mini
    reasoning_effort: str = "low"  # '' to omit (dropped automatically when a model refuses it)
    timeout_s: float = 60.0
    max_retries: int = 4  # on 429 / 5xx / timeouts / connection errors
    backoff_base_s: float = 1.0  # first backoff delay; doubles per retry (Retry-After wins)
    prices: dict[str, list[float]] = field(default_factory=dict)  # model → [input, output] USD per 1M tokens
    use_cache: bool = True  # persistent response cache under <memory home>/cache/llm
    # json_schema (OpenAI, Azure, vLLM) | json_object (llama.cpp's server: json_object + schema as grammar)
    response_format: str = "json_schema"
    max_output_tokens: int = 4096  # per answer (a small local model under a grammar can run on to the cap)

    def kind(self) -> str:
        """offline | openai: what a client built now would be."""
        if self.teacher not in TEACHERS:
            raise LLMConfigurationError(f"unknown teacher {self.teacher!r}: use auto, offline or openai")
        if self.teacher == "offline":
            return "offline"
        if self._key():
            return "openai"
        if self.teacher == "openai":
            raise LLMConfigurationError("teacher=openai but no API key: set api_key or OPENAI_API_KEY")
        return "offline"

    def _key(self) -> str | None:
        return self.api_key or OpenAIEndpoint.from_environment().api_key


def build_llm_client(settings: LLMSettings, cache_dir: Path | None = None) -> LLMClient | None:
    """The strict client `settings` describe (cached under `cache_dir` when caching is on), or None when no
    LLM is configured."""
    if settings.kind() == "offline":
        return None
    endpoint = OpenAIEndpoint.from_environment()
    from memory_core.llm.openai_client import OpenAICompatibleClient

    client = OpenAICompatibleClient(
        api_key=settings.api_key or endpoint.api_key or "",
        model=settings.model or endpoint.model,
        base_url=settings.base_url or endpoint.base_url,
        azure_api_version=settings.azure_api_version,
        reasoning_effort=settings.reasoning_effort or None,
        timeout_s=settings.timeout_s,
        max_retries=settings.max_retries,
        backoff_base_s=settings.backoff_base_s,
        prices=PriceTable.from_config(settings.prices),
        response_format=settings.response_format,
        max_output_tokens=settings.max_output_tokens,
    )
    if settings.use_cache and cache_dir is not None:
        return CachedLLMClient(client, ResponseCache.in_dir(cache_dir))
    return client

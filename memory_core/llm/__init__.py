"""The LLM layer (SGR, docs/architecture.md §5): one abstract capability, one module per provider, a persistent response
cache and per-corpus accounting. The `openai` SDK is imported only when a call is made."""

from memory_core.llm.base import (
    LLMClient,
    LLMConfigurationError,
    StructuredRequest,
    StructuredResult,
    parse_answer,
)
from memory_core.llm.cache import CachedLLMClient, ResponseCache
from memory_core.llm.prices import PriceTable

__all__ = [
    "CachedLLMClient",
    "LLMClient",
    "LLMConfigurationError",
    "PriceTable",
    "ResponseCache",
    "StructuredRequest",
    "StructuredResult",
    "parse_answer",
]

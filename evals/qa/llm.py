"""The reader's and judge's chat model: any OpenAI-compatible chat-completions endpoint via the `openai` client."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memory_core.errors import MemoryOSError
from memory_core.settings import OpenAIEndpoint


class LLMNotConfigured(MemoryOSError):
    """No endpoint configured for the QA reader / judge."""


@dataclass
class ChatModel:
    model: str
    client: Any  # openai.OpenAI

    @classmethod
    def from_environment(cls, model: str) -> ChatModel:
        """OPENAI_API_KEY (required) and OPENAI_BASE_URL (optional: any OpenAI-compatible server)."""
        endpoint = OpenAIEndpoint.from_environment()
        if not endpoint.api_key:
            raise LLMNotConfigured(
                "eval qa needs an OpenAI-compatible chat endpoint: set OPENAI_API_KEY "
                "(and OPENAI_BASE_URL for a server other than OpenAI's); retrieval metrics need none: use eval retrieval"
            )
        from openai import OpenAI

        # the client retries 429 / 5xx / timeouts with backoff
        return cls(
            model, OpenAI(api_key=endpoint.api_key, base_url=endpoint.base_url, max_retries=3, timeout=120.0)
        )

    def complete(self, system: str, user: str, max_tokens: int) -> str:
        messages = ([{"role": "system", "content": system}] if system else []) + [
            {"role": "user", "content": user}
        ]
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, temperature=0, max_tokens=max_tokens
        )
        if not response.choices:
            raise RuntimeError(f"{self.model}: the endpoint returned no choice")
        return (response.choices[0].message.content or "").strip()

"""Which driver answers: `auto` (the LLM driver when an LLM is configured — a key in the settings or the
environment — else the offline driver), `offline`, or `llm` (a key required). One rule for every place a
user reaches the agent: `memory-os ask --driver`, the MCP server's `ask_memory`."""

from __future__ import annotations

from pathlib import Path

from memory_query.agent.driver import AgentDriver
from memory_query.agent.offline import OfflineDriver

DRIVER_KINDS = ("auto", "offline", "llm")


def choose_driver(kind: str = "auto", cache_dir: Path | None = None, model: str | None = None) -> AgentDriver:
    """The driver `kind` names; the LLM client is the project's strict one, cached under `cache_dir`."""
    if kind not in DRIVER_KINDS:
        raise ValueError(f"unknown agent driver {kind!r}: use {', '.join(DRIVER_KINDS)}")
    if kind == "offline":
        return OfflineDriver()
    from memory_core.llm.factory import LLMSettings, build_llm_client

    client = build_llm_client(
        LLMSettings(teacher="openai" if kind == "llm" else "auto", model=model), cache_dir
    )
    if client is None:
        return OfflineDriver()
    from memory_query.agent.llm_driver import LLMDriver

    return LLMDriver(client)

"""Dagster resources: one ConfigurableResource per external system (storage, LLM, embeddings, graph,
vector index). Each builds the provider object of `memory_core` that the domain logic uses; nothing here
reads the environment at import time.
"""

from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage

__all__ = ["EmbeddingsResource", "LLMResource", "MemoryStorage"]

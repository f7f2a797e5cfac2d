"""The read side of Memory OS: `query_memory` (retrieval over named paths with cited XML evidence), the agent
tools, the session-scoping middleware and the MCP server. It reads the assets the pipeline built and never
runs the pipeline; it imports no Dagster. The public face is `memory_query.api`: `query_memory` and `ask` (the agent loop's cited answer)."""

from memory_query.api import ask, query_memory
from memory_query.evidence import CitationReport, EvidenceItem, MemoryAnswer, check_citations
from memory_query.paths import PATH_NAMES
from memory_query.pool import ReaderPool
from memory_query.scoping import Scope, ScopedTools
from memory_query.settings import RetrievalSettings
from memory_query.tools import MemoryTools, ToolError

__all__ = [
    "PATH_NAMES",
    "CitationReport",
    "EvidenceItem",
    "MemoryAnswer",
    "MemoryTools",
    "ReaderPool",
    "RetrievalSettings",
    "Scope",
    "ScopedTools",
    "ToolError",
    "ask",
    "check_citations",
    "query_memory",
]

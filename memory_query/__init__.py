"""The read side of Memory OS: `query_memory` (hierarchical retrieval with cited XML evidence), the agent
tools, the session-scoping middleware and the MCP server. It reads the assets the pipeline built and never
runs the pipeline; it imports no Dagster."""

from memory_query.evidence import CitationReport, EvidenceItem, MemoryAnswer, check_citations
from memory_query.retrieval import RetrievalSettings, RetrievalWeights, query_memory, reader_for
from memory_query.scoping import Scope, ScopedTools
from memory_query.tools import MemoryTools, ToolError

__all__ = [
    "CitationReport",
    "EvidenceItem",
    "MemoryAnswer",
    "MemoryTools",
    "RetrievalSettings",
    "RetrievalWeights",
    "Scope",
    "ScopedTools",
    "ToolError",
    "check_citations",
    "query_memory",
    "reader_for",
]

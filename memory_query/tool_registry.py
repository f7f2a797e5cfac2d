"""The one registry of the read side's tools: each tool's name, its result model and what it does.

The base tools (`MemoryTools`) and the scoping layer (`ScopedTools`) implement the agent tools under these
names, the MCP server registers every tool from here (`memory_query.mcp_server.build_server`), the traces
record these names, and the explorer shows the same results. A tool added here and not implemented by the
MCP server's `MemoryServer` fails the server's construction, not a client's call.
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_query.tool_results import (
    AskMemoryResult,
    CitationCheck,
    EvidenceSubmission,
    ExploreNodeResult,
    FactsResult,
    LensResult,
    QueryMemoryResult,
    SmartSearchResult,
    SourceMessage,
    ToolResult,
)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    result: type[ToolResult] | None  # None: a plain JSON value (list_corpora)
    description: str
    #: an agent tool: a method of `MemoryTools` and `ScopedTools` (the others are served by the MCP server
    #: over a corpus's whole read side: query_memory, ask_memory, and two without a corpus)
    agent: bool = False


LIST_CORPORA = ToolSpec("list_corpora", None, "The corpora this server answers from.")
QUERY_MEMORY = ToolSpec(
    "query_memory",
    QueryMemoryResult,
    "Hierarchical retrieval (topics > concepts > graph > evidence, fused with search over the raw messages): "
    "ranked, cited evidence and the XML context, each item with its facts (current / superseded, valid_from "
    "/ valid_until, superseded_by). `as_of` (ISO date): what was true then; `believed_at` (ISO): the facts as "
    "memory believed them then; reflective hypotheses only with psychological_access=true.",
)
ASK_MEMORY = ToolSpec(
    "ask_memory",
    AskMemoryResult,
    "A question answered by the Planner > Scout > Synthesizer loop: an answer whose every sentence cites the "
    "evidence it rests on (or an abstention), the evidence, and every step taken. `as_of` (ISO date) is the "
    "question's date (a bare date: its end): memory as it stood then, relative time words read against it; "
    "`believed_at` (ISO date or time): the facts as memory believed them then.",
)
SMART_SEARCH = ToolSpec(
    "smart_search",
    SmartSearchResult,
    "Evidence messages for a query, with an OR fallback over its components when the whole finds little.",
    agent=True,
)
EXPLORE_NODE = ToolSpec(
    "explore_node",
    ExploreNodeResult,
    "Any node (Domain, AnchorEntity, Topic, Concept, Segment, Message, Conversation, FactState): summary and, "
    "per relation, the count and first neighbours.",
    agent=True,
)
LENS = ToolSpec(
    "lens",
    LensResult,
    'Follow relation paths from a node, e.g. ["Topic>Concept>Message"] or ["Concept>FactState>HISTORY"]; at '
    "most 20 ids per path.",
    agent=True,
)
FACTS = ToolSpec(
    "facts",
    FactsResult,
    "Fact histories per (subject, slot): the current value, what it replaced and when (valid_from / "
    "valid_until / superseded_by), each state cited. `as_of` (ISO): what was true then; `believed_at` (ISO): "
    "what memory believed then, before later revisions.",
    agent=True,
)
READ_SOURCE_MESSAGE = ToolSpec(
    "read_source_message",
    SourceMessage,
    "The original text of a message with its provenance and its neighbours in the conversation.",
    agent=True,
)
SUBMIT_EVIDENCE = ToolSpec(
    "submit_evidence",
    EvidenceSubmission,
    "Submit the messages that support a claim (the exit of a search); unknown ids are rejected.",
    agent=True,
)
CHECK_ANSWER_CITATIONS = ToolSpec(
    "check_answer_citations",
    CitationCheck,
    "Check that every sentence of an answer cites evidence among `citations`.",
)

TOOLS: tuple[ToolSpec, ...] = (
    LIST_CORPORA,
    QUERY_MEMORY,
    ASK_MEMORY,
    SMART_SEARCH,
    EXPLORE_NODE,
    LENS,
    FACTS,
    READ_SOURCE_MESSAGE,
    SUBMIT_EVIDENCE,
    CHECK_ANSWER_CITATIONS,
)
TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in TOOLS)
AGENT_TOOLS: tuple[ToolSpec, ...] = tuple(t for t in TOOLS if t.agent)


def tool_spec(name: str) -> ToolSpec:
    for spec in TOOLS:
        if spec.name == name:
            return spec
    raise KeyError(f"no tool {name!r}; the tools are: {', '.join(TOOL_NAMES)}")

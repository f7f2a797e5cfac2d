"""The MCP server: `query_memory`, `ask_memory` (the agent loop) and the agent tools over the corpora of one
memory home.

Every tool goes through the scoping middleware (`ScopedTools`): a request names a corpus the server was
started for, and ids outside it (or outside the allowed sessions) look unknown. Reflective data is returned
only when the request carries `psychological_access=true`. Transports: stdio, and streamable HTTP bound to
loopback unless configured otherwise, optionally behind a bearer token. No Dagster here.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Sequence
from datetime import datetime

from memory_core.corpus_names import closest_names, unknown_corpus
from memory_core.errors import MemoryOSError
from memory_core.store.db import MemoryHome
from memory_query.agent import AgentBudget, AgentDriver
from memory_query.agent.choice import choose_driver
from memory_query.agent.timeframe import as_of_from_text
from memory_query.api import ask, query_memory
from memory_query.evidence import check_citations
from memory_query.pool import ReaderPool
from memory_query.scoping import Scope, ScopedTools
from memory_query.tool_registry import TOOLS
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
)
from memory_query.tools import MemoryTools, ToolError

INSTRUCTIONS = (
    "Memory OS: a provable memory of long chat histories. ask_memory answers a question with cited evidence in "
    "a few planned steps. To search yourself, start with query_memory (hierarchical retrieval with "
    "cited XML evidence) or smart_search; walk the hierarchy Domain > AnchorEntity > Topic > Concept > Segment > "
    "Message with explore_node and lens; what is current and what it replaced with facts; read originals with "
    "read_source_message; finish with submit_evidence. "
    "Cite every claim as [Source:<message id>] or [Concept:<concept id>]."
)


class MemoryServer:
    """The corpora one server exposes, each behind its scope."""

    def __init__(
        self,
        home: MemoryHome,
        corpora: Sequence[str] | None = None,
        sessions: dict[str, Sequence[str]] | None = None,
        agent_driver: AgentDriver | str = "auto",
    ):
        self.home = home
        registered = [r["name"] for r in home.registrations()]
        self.corpora = list(corpora) if corpora else registered
        unknown = [c for c in self.corpora if c not in registered]
        if unknown:
            raise unknown_corpus(home, unknown[0], registered)
        self.sessions = {k: list(v) for k, v in (sessions or {}).items()}
        self.pool = ReaderPool(home)  # the server stays warm: each corpus's memory is loaded once
        # ask_memory's driver: a driver, or its kind ("auto": the LLM driver when an LLM is configured)
        self.agent_driver = (
            choose_driver(agent_driver, home.cache_dir) if isinstance(agent_driver, str) else agent_driver
        )
        self._tools: dict[str, ScopedTools] = {}

    def warm(self):
        """Load the served corpora's memory in the background (the first query then answers warm)."""
        return self.pool.warm_in_background(self.corpora)

    def close(self) -> None:
        self.pool.close()

    def scope(self, corpus: str) -> Scope:
        if corpus not in self.corpora:
            near = closest_names(corpus, self.corpora)
            hint = f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""
            raise ToolError(f"unknown corpus {corpus!r}.{hint} This server serves: {', '.join(self.corpora)}")
        return Scope.of(corpus, self.sessions.get(corpus))

    def tools(self, corpus: str) -> ScopedTools:
        scope = self.scope(corpus)
        if corpus not in self._tools:
            self._tools[corpus] = ScopedTools(MemoryTools(self.pool.reader(corpus)), scope)
        return self._tools[corpus]

    # ------------------------------------------------------------------------------------ the tools
    # one method per tool of `memory_query.tool_registry.TOOLS`, named as the tool: its signature is the
    # tool's input schema, its return annotation the output schema

    def list_corpora(self) -> list[str]:
        return self.corpora

    def query_memory(
        self,
        corpus: str,
        question: str,
        k: int = 8,
        as_of: str | None = None,
        psychological_access: bool = False,
        believed_at: str | None = None,
    ) -> QueryMemoryResult:
        answer = query_memory(
            question,
            corpus,
            max(1, min(k, 20)),
            as_of=datetime.fromisoformat(as_of) if as_of else None,
            scope=self.scope(corpus),
            psychological_access=psychological_access,
            pool=self.pool,
            believed_at=datetime.fromisoformat(believed_at) if believed_at else None,
        )
        return QueryMemoryResult.of(answer)

    def ask_memory(
        self,
        corpus: str,
        question: str,
        as_of: str | None = None,
        max_steps: int = 6,
        believed_at: str | None = None,
    ) -> AskMemoryResult:
        view = {"believed_at": as_of_from_text(believed_at)} if believed_at else {}
        answer = ask(
            question,
            corpus,
            as_of=as_of_from_text(as_of),
            scope=self.scope(corpus),
            driver=self.agent_driver,
            budget=AgentBudget(max_steps=max(3, min(max_steps, 12))),
            pool=self.pool,
            **view,
        )
        return AskMemoryResult.of(answer)

    def smart_search(self, corpus: str, query: str, k: int = 8) -> SmartSearchResult:
        return self.tools(corpus).smart_search(query, k)

    def explore_node(self, corpus: str, node_id: str, node_type: str | None = None) -> ExploreNodeResult:
        return self.tools(corpus).explore_node(node_id, node_type)

    def lens(
        self, corpus: str, node_id: str, paths: list[str] | None = None, max_ids: int = 20
    ) -> LensResult:
        return self.tools(corpus).lens(node_id, paths, max_ids)

    def facts(
        self,
        corpus: str,
        subject: str | None = None,
        slot: str | None = None,
        as_of: str | None = None,
        believed_at: str | None = None,
    ) -> FactsResult:
        when = datetime.fromisoformat(as_of) if as_of else None
        believed = datetime.fromisoformat(believed_at) if believed_at else None
        return self.tools(corpus).facts(subject, slot, when, believed)

    def read_source_message(self, corpus: str, message_id: str, context: int = 1) -> SourceMessage:
        return self.tools(corpus).read_source_message(message_id, context)

    def submit_evidence(self, corpus: str, message_ids: list[str], claim: str) -> EvidenceSubmission:
        return self.tools(corpus).submit_evidence(message_ids, claim)

    def check_answer_citations(self, answer: str, citations: list[str]) -> CitationCheck:
        return CitationCheck(**check_citations(answer, set(citations)).as_dict())


def _anticipated(fn):
    """Errors the agent can act on (unknown id, corpus, relation) reach it as readable tool errors; the MCP
    SDK would otherwise hide them behind "Error executing tool"."""
    from mcp.server.mcpserver.exceptions import ToolError as SdkToolError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (ToolError, MemoryOSError, ValueError) as exc:
            raise SdkToolError(str(exc)) from exc

    return wrapper


def build_server(memory: MemoryServer):
    """An MCP server with every tool of the registry, each served by `memory`'s method of its name."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="memory-os", instructions=INSTRUCTIONS)
    for spec in TOOLS:
        server.add_tool(
            _anticipated(getattr(memory, spec.name)), name=spec.name, description=spec.description
        )
    return server


def bearer_guard(app, token: str):
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope, receive, send):
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if not hmac.compare_digest(headers.get(b"authorization", b""), expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token"})
                return
        await app(scope, receive, send)

    return guarded


def serve(
    memory: MemoryServer,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
) -> None:
    server = build_server(memory)
    memory.warm()
    try:
        if transport == "stdio":
            server.run("stdio")
            return
        import uvicorn

        app = server.streamable_http_app(host=host)
        if token:
            app = bearer_guard(app, token)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    finally:
        memory.close()

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
from typing import Any

from pydantic import BaseModel, Field

from memory_core.errors import MemoryOSError
from memory_core.store.db import MemoryHome
from memory_query.agent import AgentBudget, AgentDriver
from memory_query.agent.choice import choose_driver
from memory_query.agent.timeframe import as_of_from_text
from memory_query.api import ask, query_memory
from memory_query.evidence import check_citations
from memory_query.pool import ReaderPool
from memory_query.scoping import Scope, ScopedTools
from memory_query.tools import MemoryTools, ToolError

INSTRUCTIONS = (
    "Memory OS: a provable memory of long chat histories. ask_memory answers a question with cited evidence in "
    "a few planned steps. To search yourself, start with query_memory (hierarchical retrieval with "
    "cited XML evidence) or smart_search; walk the hierarchy Domain > AnchorEntity > Topic > Concept > Segment > "
    "Message with explore_node and lens; what is current and what it replaced with facts; read originals with "
    "read_source_message; finish with submit_evidence. "
    "Cite every claim as [Source:<message id>] or [Concept:<concept id>]."
)


class EvidenceOut(BaseModel):
    cite: str
    message_id: str
    author: str
    role: str
    time: str
    conversation_ref: str
    source_ref: str
    text: str
    span: list[int]
    score: float
    paths: list[str]
    fact_status: str | None = Field(
        default=None,
        description="the fact the question is about: current / superseded / ended / disputed ...",
    )
    valid_from: str | None = None
    valid_until: str | None = None
    superseded_by: str | None = Field(default=None, description="the message that replaced the fact")
    on_active_branch: bool = True
    facts: list[dict[str, Any]] = Field(default_factory=list, description="every fact the message states")


class QueryMemoryResult(BaseModel):
    corpus: str
    question: str
    evidence: list[EvidenceOut]
    concepts: list[dict[str, Any]] = Field(description="concepts with their evidence citations")
    context: str = Field(description="the XML evidence blocks to reason over")
    paths_available: dict[str, bool]


class AskEvidenceOut(BaseModel):
    cite: str
    message_id: str
    author: str
    time: str
    conversation_ref: str
    source_ref: str
    quote: str = Field(description="the span of the message that answers")
    span: list[int]
    why: str = Field(description="how the Scout found it")


class AskMemoryResult(BaseModel):
    corpus: str
    question: str
    answer: str = Field(description="every sentence cited [Source:<id>] / [Concept:<id>], or an abstention")
    abstained: bool
    gaps: list[str] = Field(description="what the evidence does not say")
    evidence: list[AskEvidenceOut]
    steps: list[dict[str, Any]] = Field(description="the trace: role, tool, arguments, ids, tokens, latency")
    driver: str


class CitationCheck(BaseModel):
    valid: bool
    sentences: int
    uncited: list[str]
    unresolved: list[str]


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
            raise ToolError(f"not registered under {home.root}: {', '.join(unknown)}")
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
            raise ToolError(f"unknown corpus {corpus!r}; this server serves: {', '.join(self.corpora)}")
        return Scope.of(corpus, self.sessions.get(corpus))

    def tools(self, corpus: str) -> ScopedTools:
        scope = self.scope(corpus)
        if corpus not in self._tools:
            self._tools[corpus] = ScopedTools(MemoryTools(self.pool.reader(corpus)), scope)
        return self._tools[corpus]

    def query(
        self,
        corpus: str,
        question: str,
        k: int,
        as_of: str | None,
        psychological_access: bool,
        believed_at: str | None = None,
    ) -> QueryMemoryResult:
        when = datetime.fromisoformat(as_of) if as_of else None
        answer = query_memory(
            question,
            corpus,
            k,
            as_of=when,
            scope=self.scope(corpus),
            psychological_access=psychological_access,
            pool=self.pool,
            believed_at=datetime.fromisoformat(believed_at) if believed_at else None,
        )
        return QueryMemoryResult(
            corpus=corpus,
            question=question,
            evidence=[
                EvidenceOut(
                    cite=i.citation,
                    message_id=i.message_id,
                    author=i.author,
                    role=i.role,
                    time=i.created_at.isoformat(),
                    conversation_ref=i.conversation_ref,
                    source_ref=i.source_ref,
                    text=i.text,
                    span=[i.span_start, i.span_end],
                    score=round(i.score, 4),
                    paths=i.paths,
                    fact_status=(i.fact or {}).get("status"),
                    valid_from=(i.fact or {}).get("valid_from"),
                    valid_until=(i.fact or {}).get("valid_until"),
                    superseded_by=((i.fact or {}).get("superseded_by") or {}).get("cite"),
                    on_active_branch=i.on_active_branch,
                    facts=i.facts,
                )
                for i in answer.items
            ],
            concepts=[
                {
                    "cite": c.citation,
                    "title": c.title,
                    "type": c.type,
                    "description": c.description,
                    "evidence": [f"[Source:{m}]" for m in c.evidence_message_ids],
                }
                for c in answer.concepts
            ],
            context=answer.context,
            paths_available=answer.paths_available,
        )

    def ask(
        self, corpus: str, question: str, as_of: str | None, max_steps: int, believed_at: str | None = None
    ) -> AskMemoryResult:
        view = {"believed_at": as_of_from_text(believed_at)} if believed_at else {}
        answer = ask(
            question,
            corpus,
            as_of=as_of_from_text(as_of),
            scope=self.scope(corpus),
            driver=self.agent_driver,
            budget=AgentBudget(max_steps=max_steps),
            pool=self.pool,
            **view,
        )
        return AskMemoryResult(
            corpus=corpus,
            question=question,
            answer=answer.answer,
            abstained=answer.abstained,
            gaps=answer.gaps,
            evidence=[
                AskEvidenceOut(
                    cite=e.citation,
                    message_id=e.message_id,
                    author=e.author,
                    time=e.created_at.isoformat(),
                    conversation_ref=e.conversation_ref,
                    source_ref=e.source_ref,
                    quote=e.quote,
                    span=[e.span_start, e.span_end],
                    why=e.why,
                )
                for e in answer.evidence
            ],
            steps=[s.as_dict() for s in answer.steps],
            driver=answer.driver,
        )


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
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="memory-os", instructions=INSTRUCTIONS)
    register = server.tool

    def tool():
        return lambda fn: register()(_anticipated(fn))

    @tool()
    def list_corpora() -> list[str]:
        """The corpora this server answers from."""
        return memory.corpora

    @tool()
    def query_memory(
        corpus: str,
        question: str,
        k: int = 8,
        as_of: str | None = None,
        psychological_access: bool = False,
        believed_at: str | None = None,
    ) -> QueryMemoryResult:
        """Hierarchical retrieval (topics > concepts > graph > evidence, fused with search over the raw
        messages): ranked, cited evidence and the XML context, each item with its facts (current /
        superseded, valid_from / valid_until, superseded_by). `as_of` (ISO date): what was true then;
        `believed_at` (ISO): the facts as memory believed them then; reflective hypotheses only with
        psychological_access=true."""
        return memory.query(corpus, question, max(1, min(k, 20)), as_of, psychological_access, believed_at)

    @tool()
    def ask_memory(
        corpus: str,
        question: str,
        as_of: str | None = None,
        max_steps: int = 6,
        believed_at: str | None = None,
    ) -> AskMemoryResult:
        """A question answered by the Planner > Scout > Synthesizer loop: an answer whose every sentence cites
        the evidence it rests on (or an abstention), the evidence, and every step taken. `as_of` (ISO date)
        is the question's date (a bare date: its end): memory as it stood then, relative time words read
        against it; `believed_at` (ISO date or time): the facts as memory believed them then."""
        return memory.ask(corpus, question, as_of, max(3, min(max_steps, 12)), believed_at)

    @tool()
    def smart_search(corpus: str, query: str, k: int = 8) -> dict:
        """Evidence messages for a query, with an OR fallback over its components when the whole finds little."""
        return memory.tools(corpus).smart_search(query, k)

    @tool()
    def explore_node(corpus: str, node_id: str, node_type: str | None = None) -> dict:
        """Any node (Domain, AnchorEntity, Topic, Concept, Segment, Message, Conversation, FactState): summary
        and, per relation, the count and first neighbours."""
        return memory.tools(corpus).explore_node(node_id, node_type)

    @tool()
    def lens(corpus: str, node_id: str, paths: list[str] | None = None, max_ids: int = 20) -> dict:
        """Follow relation paths from a node, e.g. ["Topic>Concept>Message"] or ["Concept>FactState>HISTORY"];
        at most 20 ids per path."""
        return memory.tools(corpus).lens(node_id, paths, max_ids)

    @tool()
    def facts(
        corpus: str,
        subject: str | None = None,
        slot: str | None = None,
        as_of: str | None = None,
        believed_at: str | None = None,
    ) -> dict:
        """Fact histories per (subject, slot): the current value, what it replaced and when (valid_from /
        valid_until / superseded_by), each state cited. `as_of` (ISO): what was true then; `believed_at`
        (ISO): what memory believed then, before later revisions."""
        when = datetime.fromisoformat(as_of) if as_of else None
        believed = datetime.fromisoformat(believed_at) if believed_at else None
        return memory.tools(corpus).facts(subject, slot, when, believed)

    @tool()
    def read_source_message(corpus: str, message_id: str, context: int = 1) -> dict:
        """The original text of a message with its provenance and its neighbours in the conversation."""
        return memory.tools(corpus).read_source_message(message_id, context)

    @tool()
    def submit_evidence(corpus: str, message_ids: list[str], claim: str) -> dict:
        """Submit the messages that support a claim (the exit of a search); unknown ids are rejected."""
        return memory.tools(corpus).submit_evidence(message_ids, claim)

    @tool()
    def check_answer_citations(answer: str, citations: list[str]) -> CitationCheck:
        """Check that every sentence of an answer cites evidence among `citations`."""
        report = check_citations(answer, set(citations))
        return CitationCheck(**report.as_dict())

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

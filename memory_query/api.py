"""The public face of the read side: `query_memory` (ranked, cited evidence for one question) and `ask` (a
question answered by the Planner → Scout → Synthesizer loop over the scoped agent tools, every sentence
cited, or an abstention).

A caller that asks many questions (the MCP server, an eval run, a CLI command looping over questions)
passes its `ReaderPool`, so each corpus's memory is loaded once; without one the question is answered
through a reader that lives for this call only.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from memory_core.store.db import CorpusStore, MemoryHome
from memory_query.evidence import MemoryAnswer
from memory_query.pool import ReaderPool, reading
from memory_query.retrieval import rank
from memory_query.scoping import Scope, ScopedTools, scoped_rank
from memory_query.settings import RetrievalSettings
from memory_query.tools import MemoryTools

if TYPE_CHECKING:  # the agent loads when `ask` runs: `query_memory` from a fresh process does not pay for it
    from memory_query.agent import AgentAnswer, AgentBudget, AgentDriver


def query_memory(
    question: str,
    corpus: str | CorpusStore,
    k: int = 10,
    *,
    as_of: datetime | None = None,
    scope: Scope | None = None,
    roles: tuple[str, ...] | None = None,
    psychological_access: bool = False,
    home: MemoryHome | str | None = None,
    settings: RetrievalSettings | None = None,
    pool: ReaderPool | None = None,
    believed_at: datetime | None = None,
) -> MemoryAnswer:
    """Ranked, cited evidence for `question` from `corpus`, as memory stood at `as_of` (default: now).

    `as_of` is valid-time travel (messages after it do not exist; the facts are those true then);
    `believed_at` is system-time travel over facts (the states memory held current at that time, before
    later revisions). Each item carries its facts (status, valid_from / valid_until, superseded_by).
    `roles` keeps only messages of those roles; `scope` removes every id outside the allowed sessions before
    anything is returned (the scoping middleware); reflective data (user reactions) is included only with
    `psychological_access=True`; `settings` chooses paths and weights (`RetrievalSettings`).
    """
    options = {
        "as_of": as_of,
        "roles": roles,
        "psychological_access": psychological_access,
        "settings": settings,
        "believed_at": believed_at,
    }
    with reading(corpus, home, pool) as reader:
        if scope is None:
            return rank(reader, question, k, **options)
        return scoped_rank(reader, scope, question, k, **options)


def ask(
    question: str,
    corpus: str | CorpusStore,
    *,
    as_of: datetime | None = None,
    scope: Scope | None = None,
    driver: AgentDriver | None = None,
    budget: AgentBudget | None = None,
    home: MemoryHome | str | None = None,
    settings: RetrievalSettings | None = None,
    pool: ReaderPool | None = None,
    trace: bool = True,
    **view,
) -> AgentAnswer:
    """`question` answered from `corpus` as memory stood at `as_of` (default: now; relative time words are
    read against it) by the agent loop: `driver` decides (default the offline driver; `LLMDriver` for an
    OpenAI-compatible model), `budget` caps steps and tokens, `scope` limits the sessions every tool call
    may see; further keyword arguments (`view`) go to every search the Scout makes (the read side's view
    options, e.g. the revision layer's `believed_at` once it has one). The answer carries its cited
    evidence, the plan and every step; with `trace` the steps are also appended to the corpus's agent
    trace."""
    from memory_query.agent import AgentLoop, OfflineDriver

    with reading(corpus, home, pool) as reader:
        tools = ScopedTools(
            MemoryTools(reader, settings=settings, trace=False), scope or Scope(reader.store.name)
        )
        return AgentLoop(driver or OfflineDriver(), tools, budget, trace).run(question, as_of=as_of, **view)

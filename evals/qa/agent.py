"""`eval qa --method agent`: the agent loop answers, with the LLM driver on the configured model (the
project's strict client: cached under the memory home, costed in each corpus's `llm_calls`), over the corpora
the `memory` method builds. The hypothesis the judge reads is the loop's answer without its citation marks
(an abstention says memory holds no evidence, which the abstention judge accepts as "unanswerable")."""

from __future__ import annotations

import re

from evals.datasets import Haystack, Question
from evals.qa.run import Answerer
from evals.retrievers.memory import BuildOnce, CorpusBuilder
from memory_core.llm.factory import LLMSettings, build_llm_client
from memory_core.store.db import MemoryHome
from memory_query.agent import AgentBudget
from memory_query.agent.llm_driver import LLMDriver
from memory_query.api import ask
from memory_query.evidence import CITATION
from memory_query.pool import ReaderPool


def without_citations(answer: str) -> str:
    return re.sub(r"\s+([.,;:])", r"\1", re.sub(r"\s+", " ", CITATION.sub("", answer))).strip()


def agent_answerer(
    home: MemoryHome, build_corpus: CorpusBuilder, model: str, budget: AgentBudget | None = None
) -> Answerer:
    """The agent loop with the LLM driver on `model`; each haystack built once (`BuildOnce`)."""
    client = build_llm_client(LLMSettings(teacher="openai", model=model), home.cache_dir)
    driver, pool, build = LLMDriver(client), ReaderPool(home), BuildOnce(build_corpus)
    budget = budget or AgentBudget()

    def answer(haystack: Haystack, question: Question) -> str:
        store = build(haystack).store
        result = ask(question.question, store, as_of=question.as_of, driver=driver, budget=budget, pool=pool)
        return without_citations(result.answer)

    return Answerer(answer, {"answerer": "agent", **driver.describe(), "max_steps": budget.max_steps})

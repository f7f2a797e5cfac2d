"""Accounting of LLM calls in the corpus's `llm_calls` table: one row per logical call (cache hits included,
at zero cost), written as soon as the call returns so a crashed run still shows what it spent."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Engine, Integer, func, insert, select

from memory_core.llm.base import StructuredResult
from memory_core.store.db import utcnow
from memory_core.store.schema import llm_calls


def call_row(result: StructuredResult, stage: str, segment_id: str | None = None) -> dict:
    return dict(
        stage=stage,
        model=result.model,
        cache_key=result.cache_key,
        prompt_sha256=result.prompt_sha256,
        schema_sha256=result.schema_sha256,
        input_sha256=result.input_sha256,
        segment_id=segment_id,
        tokens_in=result.tokens_in,
        tokens_out=result.tokens_out,
        latency_ms=result.latency_ms,
        cost_usd=result.cost_usd,
        cache_hit=result.cache_hit,
        attempts=result.attempts,
        outcome=result.outcome,
        error=result.error,
        called_at=utcnow(),
    )


def record_calls(engine: Engine, rows: Iterable[dict]) -> int:
    rows = list(rows)
    if rows:
        with engine.begin() as conn:
            conn.execute(insert(llm_calls), rows)
    return len(rows)


def call_totals(engine: Engine, stage: str | None = None) -> dict:
    """Totals over every recorded call (of one stage): calls, cache hits, tokens, cost, failures."""
    query = select(
        func.count(),
        func.coalesce(func.sum(llm_calls.c.cache_hit.cast(Integer)), 0),
        func.coalesce(func.sum(llm_calls.c.tokens_in), 0),
        func.coalesce(func.sum(llm_calls.c.tokens_out), 0),
        func.coalesce(func.sum(llm_calls.c.cost_usd), 0.0),
        func.coalesce(func.sum(llm_calls.c.attempts), 0),
    )
    if stage:
        query = query.where(llm_calls.c.stage == stage)
    with engine.connect() as conn:
        n, hits, t_in, t_out, cost, attempts = conn.execute(query).one()
    return dict(
        calls=n, cache_hits=hits, tokens_in=t_in, tokens_out=t_out, cost_usd=round(cost, 6), attempts=attempts
    )

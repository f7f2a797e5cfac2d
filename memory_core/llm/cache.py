"""Persistent response cache: every answered call keyed by (model, prompt hash, schema hash, input hash).

It lives under the memory home's cache dir and is shared by every corpus: the same segment text in two
corpora is paid for once. `CachedLLMClient` writes an answer to the cache *before* returning it, so a run
that crashes after a call resumes from the cache instead of paying again. Only valid answers (`ok`) are
cached: an invalid one (two schema violations in a row can be chance), a refusal or an unavailable
service is asked again by a later run, and an entry that is not a valid answer (an older version cached
invalid ones) is a miss. A hit costs nothing: zero tokens, zero cost, zero attempts.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path

from sqlalchemy import (
    Column,
    DateTime,
    Float,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    bindparam,
    insert,
    select,
    update,
)

from memory_core.llm.base import LLMClient, StructuredRequest, StructuredResult, T, parse_answer
from memory_core.store.db import create_tables, get_engine, utcnow, wipe_free_pages

cache_metadata = MetaData()
llm_responses = Table(
    "llm_responses",
    cache_metadata,
    Column("cache_key", String(64), primary_key=True),
    Column("model", String(100), nullable=False),
    Column("prompt_sha256", String(64), nullable=False),
    Column("schema_sha256", String(64), nullable=False),
    Column("input_sha256", String(64), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("raw", Text, nullable=False),
    Column("error", Text, nullable=False),
    Column("tokens_in", Integer, nullable=False),
    Column("tokens_out", Integer, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("created_at", DateTime, nullable=False),
)

CACHEABLE = ("ok",)


class ResponseCache:
    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.engine = get_engine(f"sqlite:///{path}")
        create_tables(cache_metadata, self.engine)

    @classmethod
    def in_dir(cls, cache_dir: Path) -> ResponseCache:
        return cls(cache_dir / "llm" / "responses.db")

    def get(self, key: str) -> dict | None:
        with self.engine.connect() as conn:
            row = (
                conn.execute(select(llm_responses).where(llm_responses.c.cache_key == key)).mappings().first()
            )
        return dict(row) if row else None

    def put(self, result: StructuredResult) -> None:
        row = dict(
            cache_key=result.cache_key,
            model=result.model,
            prompt_sha256=result.prompt_sha256,
            schema_sha256=result.schema_sha256,
            input_sha256=result.input_sha256,
            outcome=result.outcome,
            raw=result.raw,
            error=result.error,
            tokens_in=result.tokens_in,
            tokens_out=result.tokens_out,
            cost_usd=result.cost_usd,
            created_at=utcnow(),
        )
        with self.engine.begin() as conn:
            conn.execute(llm_responses.delete().where(llm_responses.c.cache_key == result.cache_key))
            conn.execute(insert(llm_responses), [row])

    def count(self) -> int:
        with self.engine.connect() as conn:
            return len(conn.execute(select(llm_responses.c.cache_key)).all())

    def answers(self, keys: Iterable[str]) -> dict[str, str]:
        """The raw answers cached under `keys` (those present)."""
        wanted = list(dict.fromkeys(keys))
        out: dict[str, str] = {}
        with self.engine.connect() as conn:
            for i in range(0, len(wanted), 500):
                query = select(llm_responses.c.cache_key, llm_responses.c.raw).where(
                    llm_responses.c.cache_key.in_(wanted[i : i + 500])
                )
                out.update({r.cache_key: r.raw for r in conn.execute(query)})
        return out

    def redact(self, keys: Iterable[str], redactor: Callable[[str], str | None]) -> int:
        """Rewrite the cached answers of `keys` with `redactor(raw)` (None: leave it); the freed pages are
        wiped (secure_delete, checkpoint, VACUUM) so the old text is gone from the file. Returns how many
        answers changed."""
        changed = {k: new for k, raw in self.answers(keys).items() if (new := redactor(raw)) is not None}
        if changed:
            with self.engine.begin() as conn:
                conn.exec_driver_sql("PRAGMA secure_delete=ON")  # the old text is overwritten
                conn.execute(
                    update(llm_responses)
                    .where(llm_responses.c.cache_key == bindparam("k"))
                    .values(raw=bindparam("raw")),
                    [{"k": k, "raw": raw} for k, raw in changed.items()],
                )
            wipe_free_pages(self.engine)
        return len(changed)


class CachedLLMClient(LLMClient):
    """An LLM client in front of which every final answer is cached."""

    def __init__(self, inner: LLMClient, cache: ResponseCache):
        self.inner = inner
        self.cache = cache
        self.model = inner.model

    def describe(self) -> dict:
        return {**self.inner.describe(), "cache": str(self.cache.path)}

    def structured(self, request: StructuredRequest[T]) -> StructuredResult[T]:
        key = request.cache_key(self.model)
        started = time.perf_counter()
        hit = self.cache.get(key)
        if hit is not None and hit["outcome"] in CACHEABLE:
            parsed, _problem = parse_answer(hit["raw"], request.response_model)
            if parsed is not None:
                return StructuredResult(
                    model=self.model,
                    outcome=hit["outcome"],
                    parsed=parsed,
                    raw=hit["raw"],
                    error=hit["error"],
                    latency_ms=round((time.perf_counter() - started) * 1000, 1),
                    cache_hit=True,
                    cache_key=key,
                    prompt_sha256=request.prompt_sha256,
                    schema_sha256=request.schema_sha256,
                    input_sha256=request.input_sha256,
                )
        # no entry, not a valid answer, or one the current model class no longer accepts: ask again
        result = self.inner.structured(request)
        if result.outcome in CACHEABLE:
            self.cache.put(result)
        return result

"""The reflective store's retention and purge (DESIGN §8, §11): user reactions live apart from the rest of
memory, expire after the configured retention, and a purge removes a corpus's reactions completely."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, func, select

from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import user_reactions


def purge_expired_reactions(store: CorpusStore, now: datetime | None = None) -> int:
    """Retention: delete reactions whose `expires_at` has passed; returns how many. The caller holds the
    corpus write lock."""
    now = now or utcnow()
    with store.reflective.begin() as conn:
        result = conn.execute(
            delete(user_reactions).where(
                user_reactions.c.expires_at.is_not(None), user_reactions.c.expires_at <= now
            )
        )
    return result.rowcount or 0


def purge_reactions(store: CorpusStore) -> int:
    """Delete every reaction of the corpus; returns how many. The caller holds the corpus write lock. The
    extraction stage does not bring them back for conversations it has finished (it re-extracts only new or
    changed segments)."""
    with store.reflective.begin() as conn:
        result = conn.execute(delete(user_reactions))
    return result.rowcount or 0


def reaction_count(store: CorpusStore) -> int:
    with store.reflective.connect() as conn:
        return conn.execute(select(func.count()).select_from(user_reactions)).scalar_one()

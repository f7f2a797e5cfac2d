"""The source-of-truth and staging stores (SQLAlchemy Core; SQLite by default, Postgres by URL)."""

from memory_core.store.db import CorpusStore, MemoryHome, utcnow

__all__ = ["CorpusStore", "MemoryHome", "utcnow"]

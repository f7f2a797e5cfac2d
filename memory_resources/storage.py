"""The storage resource: where corpus stores live (SQLite under the memory home, or a SQLAlchemy URL)."""

from __future__ import annotations

from dagster import ConfigurableResource
from pydantic import Field

from memory_core import settings
from memory_core.store.db import CorpusStore, MemoryHome


class MemoryStorage(ConfigurableResource):
    """Source, staging and reflective stores per corpus.

    `home` defaults to `MEMORY_OS_HOME` (read when a run starts) or `~/.memory_os`. `database_url` is an
    optional SQLAlchemy URL template with `{corpus}` and `{store}` placeholders for Postgres; unset, it is
    `MEMORY_OS_DATABASE_URL` (read when a run starts), else SQLite files under the home.
    """

    home: str | None = Field(
        default=None, description="Memory home folder (default: $MEMORY_OS_HOME or ~/.memory_os)"
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL template with {corpus} and {store}; default SQLite files under home",
    )

    def memory_home(self) -> MemoryHome:
        return MemoryHome.resolve(self.home, self.database_url or settings.MEMORY_OS_DATABASE_URL.get())

    def corpus(self, name: str) -> CorpusStore:
        return self.memory_home().corpus(name)

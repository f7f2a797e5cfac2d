"""A persistent parse cache shared by every corpus: (model, sha256(text)) → the compressed `ParsedDoc`.

One SQLite file under the memory home's cache folder (`cache/parses.sqlite`), like the embedding cache:
only misses reach the model, computed parses are committed before they are returned, concurrent runs share
the file (WAL, busy timeout, `INSERT OR IGNORE`). Within a process the parses of recent texts are also kept
in memory, so a segment's second look at a message costs nothing.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory_core.ids import sha256_text
from memory_core.nlp.base import LanguageParser
from memory_core.nlp.doc import ParsedDoc
from memory_core.store.keyed_cache import KeyedCacheFile

CACHE_FILE = "parses.sqlite"
MEMORY_ITEMS = 4096  # parses kept in process memory (a conversation's worth several times over)


class ParseCache:
    def __init__(self, path: str | Path):
        self._file = KeyedCacheFile(path, "parses", "parse BLOB NOT NULL")
        self.path = self._file.path

    @classmethod
    def for_dir(cls, cache_dir: str | Path) -> ParseCache:
        return cls(Path(cache_dir) / CACHE_FILE)

    def get_many(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        return dict(self._file.select_many(model, hashes, "parse"))

    def put_many(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        self._file.insert_many([(model, key, blob) for key, blob in items])

    def count(self) -> int:
        return self._file.count()

    def close(self) -> None:
        self._file.close()


@dataclass
class ParseStats:
    requested: int = 0
    hits: int = 0
    computed: int = 0
    compute_seconds: float = 0.0
    tokens_parsed: int = 0

    def as_metadata(self, prefix: str = "parse_") -> dict[str, float | int]:
        out = {
            f"{prefix}requested": self.requested,
            f"{prefix}cache_hits": self.hits,
            f"{prefix}computed": self.computed,
            f"{prefix}compute_seconds": round(self.compute_seconds, 3),
        }
        if self.compute_seconds > 0:
            out[f"{prefix}tokens_per_second"] = round(self.tokens_parsed / self.compute_seconds, 1)
        return out


class CachedParser(LanguageParser):
    """A parser behind the persistent cache (optional) and a small in-memory one."""

    def __init__(self, inner: LanguageParser, cache: ParseCache | None = None):
        self.inner = inner
        self.cache = cache
        self.stats = ParseStats()
        self._memory: OrderedDict[tuple[str, str], ParsedDoc] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def model_name(self) -> str:  # type: ignore[override]
        return self.inner.model_name

    def describe(self) -> dict:
        return self.inner.describe()

    def parse(self, texts: Sequence[str]) -> list[ParsedDoc]:
        model = self.model_name
        keys = [sha256_text(t) for t in texts]
        out: dict[str, ParsedDoc] = {}
        with self._lock:
            for key in keys:
                doc = self._memory.get((model, key))
                if doc is not None:
                    self._memory.move_to_end((model, key))
                    out[key] = doc
        missing = [k for k in dict.fromkeys(keys) if k not in out]
        by_key = dict(zip(keys, texts, strict=True))
        if missing and self.cache is not None:
            for key, blob in self.cache.get_many(model, missing).items():
                try:
                    out[key] = ParsedDoc.from_bytes(by_key[key], blob)
                except (ValueError, KeyError):
                    continue  # an unreadable entry is a miss: parsed again below
        todo = [k for k in missing if k not in out]
        self.stats.requested += len(texts)
        fresh = set(todo)
        self.stats.hits += sum(1 for k in keys if k not in fresh)
        if todo:
            started = time.perf_counter()
            docs = self.inner.parse([by_key[k] for k in todo])
            self.stats.compute_seconds += time.perf_counter() - started
            self.stats.computed += len(todo)
            self.stats.tokens_parsed += sum(len(d) for d in docs)
            if self.cache is not None:
                self.cache.put_many(model, [(k, d.to_bytes()) for k, d in zip(todo, docs, strict=True)])
            out.update(zip(todo, docs, strict=True))
        with self._lock:
            for key in dict.fromkeys(keys):
                self._memory[(model, key)] = out[key]
                self._memory.move_to_end((model, key))
            while len(self._memory) > MEMORY_ITEMS:
                self._memory.popitem(last=False)
        return [out[k] for k in keys]

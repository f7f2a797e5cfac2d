"""What a browsing view derives from a whole corpus (fact histories by subject, the topic map's layout) is
kept on the corpus's reader while the stores it read are unchanged (their version stamps): a warm page
does not derive it again."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from memory_query.reader import CorpusReader

T = TypeVar("T")


def memoised(reader: CorpusReader, key: str, stores: tuple[str, ...], build: Callable[[], T]) -> T:
    return reader.memo(key, reader.store_stamp(*stores), build)

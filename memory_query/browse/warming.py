"""Deriving ahead what the views compute from a whole corpus, so a server's first pages answer warm."""

from __future__ import annotations

from memory_query.browse import profiles, topics
from memory_query.reader import CorpusReader


def warm(reader: CorpusReader) -> None:
    """The subjects of the profiles and the topic map (each kept on the reader while the stores stand)."""
    profiles.warm(reader)
    topics.topic_map(reader)

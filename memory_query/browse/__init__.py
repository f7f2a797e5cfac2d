"""Browsing views of one corpus's memory, for a person rather than an agent: conversations with the concept
spans in each message, concept pages, per-subject profiles of facts, the topic map and the domain → anchor →
topic tree. Each function takes a `CorpusReader` (from a `ReaderPool`) and returns a typed model
(`memory_query.browse.models`); read-only, no Dagster. The explorer (`memory-os explore`) renders them."""

from memory_query.browse.concepts import concept_list, concept_page
from memory_query.browse.conversations import conversation_list, conversation_view, locate_message
from memory_query.browse.overview import corpus_summary
from memory_query.browse.profiles import profile, subject_list
from memory_query.browse.topics import topic_map, topic_page, topic_tree
from memory_query.browse.warming import warm

__all__ = [
    "concept_list",
    "concept_page",
    "conversation_list",
    "conversation_view",
    "corpus_summary",
    "locate_message",
    "profile",
    "subject_list",
    "topic_map",
    "topic_page",
    "topic_tree",
    "warm",
]

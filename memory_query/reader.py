"""Read-only access to one corpus's built memory: stores, lexical and vector indexes, graph.

Everything is loaded lazily on first use and kept while its files are unchanged, so a long-lived reader
(the MCP server, an eval run) pays the load once and a rebuild is picked up on the next query. A part that
was never built is `None`: retrieval degrades to what exists (graph → vectors → the raw source).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
from sqlalchemy import String, select, type_coerce

from memory_core.embeddings import Embedder
from memory_core.lexical import CorpusLexicon, build_corpus_lexicon, lexicon_dir
from memory_core.store.db import CorpusStore, file_stamps
from memory_core.store.schema import (
    canonical_concepts,
    concept_evidence,
    conversations,
    messages,
    topic_concept_links,
    topic_segments,
    topics,
)
from memory_core.vector_index import FaissIndex
from memory_core.vector_index.families import family_path, open_family_index
from memory_query import read_cache
from memory_query.read_cache import SegmentMembers, pack_strings, unpack_strings

NAME_WORD = re.compile(r"[^\W\d_]+")
ROLE_AUTHORS = frozenset({"user", "assistant", "system", "tool", "human", "ai", "bot", "me", "you"})


@dataclass
class MessageTable:
    """Per-message metadata in arrays aligned with `ids` (texts stay in SQLite until an item is shown)."""

    ids: list[str]
    index: dict[str, int]
    conversation: np.ndarray  # int: index into conv_ids
    conv_ids: list[str]
    conv_refs: list[str]
    position: np.ndarray
    role: np.ndarray  # object array of str
    author: list[str]
    created_at: np.ndarray  # datetime64[us]
    time_derived: np.ndarray  # bool
    source_ref: list[str]

    def __len__(self) -> int:
        return len(self.ids)

    _STRINGS = ("ids", "conv_ids", "conv_refs", "author", "source_ref")
    _ARRAYS = ("conversation", "position", "created_at", "time_derived")

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The table as the read cache saves it (`memory_query.read_cache`)."""
        out = {name: np.asarray(getattr(self, name)) for name in self._ARRAYS}
        for name in self._STRINGS:
            out.update(pack_strings(name, getattr(self, name)))
        out.update(pack_strings("role", list(self.role)))
        return out

    @classmethod
    def from_arrays(cls, arrays) -> MessageTable:
        strings = {name: unpack_strings(arrays, name) for name in cls._STRINGS}
        role = np.empty(len(strings["ids"]), dtype=object)
        role[:] = unpack_strings(arrays, "role")
        return cls(
            index={m: i for i, m in enumerate(strings["ids"])},
            role=role,
            **strings,
            **{name: arrays[name] for name in cls._ARRAYS},
        )


@dataclass
class ConceptTable:
    ids: list[str]
    index: dict[str, int]
    rows: list[dict]
    # evidence per concept: [(message index, confidence, span_start, span_end)]
    evidence: list[list[tuple[int, float, int, int]]]

    @cached_property
    def types(self) -> np.ndarray:
        """Each concept's type, as an array (the concept path compares it with the question's asked types)."""
        return np.asarray([r["type"] for r in self.rows], dtype=str)

    def rows_of(self, ids: list[str]) -> np.ndarray:
        """The row of each id (-1 where absent), computed once per list of ids (a lexicon's concept
        documents, scored on every query): the lists are immutable once loaded, and holding the list keeps
        its identity from being reused."""
        held = self.__dict__.get("_rows_of")
        if held is None or held[0] is not ids:
            rows = np.fromiter((self.index.get(c, -1) for c in ids), dtype=np.int64, count=len(ids))
            held = self.__dict__["_rows_of"] = (ids, rows)
        return held[1]


@dataclass
class TopicTable:
    ids: list[str]
    index: dict[str, int]
    rows: list[dict]
    members: list[np.ndarray]  # message indexes per topic (through its segments)
    links: list[list[tuple[int, float]]]  # (concept index, weight 0-100) per topic


class CorpusReader:
    """`use_read_cache`: take the message table, segment map, lexical indexes and graph walks from the
    pipeline's read cache when it is as fresh as their sources (False: always from the stores and index files,
    as the cache's writer does)."""

    def __init__(self, store: CorpusStore, use_read_cache: bool = True):
        self.store = store
        self.use_read_cache = use_read_cache
        self._lock = threading.RLock()
        self._cache: dict[str, tuple[tuple, object]] = {}

    def close(self) -> None:
        """Drop what is loaded and close the graph store (a reader evicted from a process's cache)."""
        with self._lock:
            graph = self._cache.get("graph")
            if graph is not None and graph[1] is not None:
                graph[1].close()
            self._cache.clear()

    # -------------------------------------------------------------------------------- freshness
    def memo(self, key: str, stamp: tuple, build):
        """`build()` once per `stamp` of `key` (a later stamp builds again)."""
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None and hit[0] == stamp:
                return hit[1]
            value = build()
            self._cache[key] = (stamp, value)
            return value

    def store_stamp(self, *names: str) -> tuple:
        """The stores' version stamps (memory_core.store.version): an in-place change is a new stamp."""
        return tuple(self.store.version(n) for n in names)

    # -------------------------------------------------------------------------------- tables
    def cached_part(self, part: str, stamp: tuple):
        """A read-cache part derived from exactly `stamp`, or None (off, missing, stale or unreadable)."""
        return read_cache.load_part(self.store, part, stamp) if self.use_read_cache else None

    def _cached_or_loaded(self, key: str, part: str, stamp: tuple, decode, load):
        """`key` for this stamp: decoded from its read-cache part when fresh, else loaded from the source."""

        def build():
            arrays = self.cached_part(part, stamp)
            value = read_cache.decode_part(part, arrays, decode) if arrays is not None else None
            return value if value is not None else load()

        return self.memo(key, stamp, build)

    def messages(self) -> MessageTable:
        stamp = self.store_stamp("source")
        return self._cached_or_loaded(
            "messages", "messages", stamp, MessageTable.from_arrays, self._load_messages
        )

    def _load_messages(self) -> MessageTable:
        with self.store.source.connect() as conn:
            convs = conn.execute(select(conversations.c.conversation_id, conversations.c.source_ref)).all()
            rows = conn.execute(
                select(
                    messages.c.message_id,
                    messages.c.conversation_id,
                    messages.c.position,
                    messages.c.role,
                    messages.c.author,
                    # as stored (ISO text on SQLite): numpy parses 100k of them at once, far faster than a
                    # datetime per row
                    type_coerce(messages.c.created_at, String).label("created_at"),
                    messages.c.time_derived,
                    messages.c.source_ref,
                ).order_by(messages.c.conversation_id, messages.c.position)
            ).all()
        conv_index = {c.conversation_id: i for i, c in enumerate(convs)}
        ids = [r.message_id for r in rows]
        return MessageTable(
            ids=ids,
            index={m: i for i, m in enumerate(ids)},
            conversation=np.fromiter(
                (conv_index[r.conversation_id] for r in rows), dtype=np.int32, count=len(rows)
            ),
            conv_ids=[c.conversation_id for c in convs],
            conv_refs=[c.source_ref for c in convs],
            position=np.fromiter((r.position for r in rows), dtype=np.int32, count=len(rows)),
            role=np.array([r.role for r in rows], dtype=object),
            author=[r.author for r in rows],
            created_at=_datetimes([r.created_at for r in rows]),
            time_derived=np.fromiter((bool(r.time_derived) for r in rows), dtype=bool, count=len(rows)),
            source_ref=[r.source_ref for r in rows],
        )

    def message_texts(self, message_ids: list[str]) -> dict[str, tuple[str, dict]]:
        """(text, attributes) of a few messages, straight from the source store."""
        if not message_ids:
            return {}
        with self.store.source.connect() as conn:
            rows = conn.execute(
                select(messages.c.message_id, messages.c.text, messages.c.attributes).where(
                    messages.c.message_id.in_(message_ids)
                )
            ).all()
        return {r.message_id: (r.text, r.attributes or {}) for r in rows}

    def concepts(self) -> ConceptTable:
        return self.memo("concepts", self.store_stamp("source", "staging"), self._load_concepts)

    def _load_concepts(self) -> ConceptTable:
        table = self.messages()
        with self.store.staging.connect() as conn:
            rows = [
                dict(r)
                for r in conn.execute(
                    select(
                        canonical_concepts.c.concept_id,
                        canonical_concepts.c.title,
                        canonical_concepts.c.type,
                        canonical_concepts.c.description,
                        canonical_concepts.c.confidence,
                        canonical_concepts.c.trust,
                        canonical_concepts.c.state,
                        canonical_concepts.c.first_seen,
                        canonical_concepts.c.last_seen,
                    ).where(canonical_concepts.c.state.not_in(("merged", "split", "archived")))
                ).mappings()
            ]
            ids = [r["concept_id"] for r in rows]
            index = {c: i for i, c in enumerate(ids)}
            evidence: list[list[tuple[int, float, int, int]]] = [[] for _ in ids]
            for r in conn.execute(
                select(
                    concept_evidence.c.concept_id,
                    concept_evidence.c.message_id,
                    concept_evidence.c.confidence,
                    concept_evidence.c.span_start,
                    concept_evidence.c.span_end,
                ).where(concept_evidence.c.status == "active")
            ):
                ci, mi = index.get(r.concept_id), table.index.get(r.message_id)
                if ci is not None and mi is not None:
                    evidence[ci].append((mi, float(r.confidence), r.span_start, r.span_end))
        return ConceptTable(ids, index, rows, evidence)

    def topics(self) -> TopicTable:
        return self.memo("topics", self.store_stamp("source", "staging"), self._load_topics)

    def _load_topics(self) -> TopicTable:
        from memory_core.store.schema import segments

        table, concept_table = self.messages(), self.concepts()
        with self.store.staging.connect() as conn:
            rows = [
                dict(r)
                for r in conn.execute(
                    select(topics.c.topic_id, topics.c.label, topics.c.size, topics.c.domain_id)
                ).mappings()
            ]
            ids = [r["topic_id"] for r in rows]
            index = {t: i for i, t in enumerate(ids)}
            members: list[list[int]] = [[] for _ in ids]
            for r in conn.execute(
                select(topic_segments.c.topic_id, segments.c.message_ids)
                .join(segments, segments.c.segment_id == topic_segments.c.segment_id)
                .where(topic_segments.c.topic_id.is_not(None), segments.c.superseded_at.is_(None))
            ):
                ti = index.get(r.topic_id)
                if ti is not None:
                    members[ti] += [table.index[m] for m in r.message_ids if m in table.index]
            links: list[list[tuple[int, float]]] = [[] for _ in ids]
            for r in conn.execute(select(topic_concept_links)):
                ti, ci = index.get(r.topic_id), concept_table.index.get(r.concept_id)
                if ti is not None and ci is not None:
                    links[ti].append((ci, float(r.weight)))
        return TopicTable(
            ids, index, rows, [np.unique(np.asarray(m, dtype=np.int64)) for m in members], links
        )

    def facts(self):
        """Claims and FactState versions (`memory_query.facts.FactTable`), loaded once per store version."""
        from memory_query.facts import load_fact_table

        return self.memo("facts", self.store_stamp("source", "staging"), lambda: load_fact_table(self))

    def speakers(self) -> dict[str, np.ndarray]:
        """A named participant's first name (lower case) → indexes of the messages they wrote. Role-like
        authors ("user", "assistant") are not names a question would use."""
        table = self.messages()

        def build():
            by_name: dict[str, list[int]] = {}
            for i, author in enumerate(table.author):
                words = NAME_WORD.findall((author or "").lower())
                if words and words[0] not in ROLE_AUTHORS and len(words[0]) >= 2:
                    by_name.setdefault(words[0], []).append(i)
            return {name: np.asarray(rows, dtype=np.int64) for name, rows in by_name.items()}

        return self.memo("speakers", self.store_stamp("source"), build)

    def segment_messages(self) -> Mapping[str, list[int]]:
        """Current segment id → message indexes (for the segment vector index)."""
        stamp = self.store_stamp("source", "staging")
        return self._cached_or_loaded(
            "segment_messages", "segments", stamp, SegmentMembers.from_arrays, self._load_segment_messages
        )

    def _load_segment_messages(self) -> dict[str, list[int]]:
        from memory_core.store.schema import segments

        table = self.messages()
        with self.store.staging.connect() as conn:
            return {
                r.segment_id: [table.index[m] for m in r.message_ids if m in table.index]
                for r in conn.execute(
                    select(segments.c.segment_id, segments.c.message_ids).where(
                        segments.c.superseded_at.is_(None)
                    )
                )
            }

    # -------------------------------------------------------------------------------- indexes
    def lexicon_files(self) -> list[Path]:
        folder = lexicon_dir(self.store)
        return [folder / f"{n}.npz" for n in CorpusLexicon.FILES]

    def lexicon(self) -> tuple[CorpusLexicon, bool]:
        """The lexical indexes, and whether they came from the built index files (False: built here from
        the raw source because the `indexes` asset has not written them)."""
        folder, files = lexicon_dir(self.store), self.lexicon_files()
        if all(f.exists() for f in files):
            lexicon = self._cached_or_loaded(
                "lexicon",
                "lexicon",
                file_stamps(files),
                read_cache.decode_lexicon,
                lambda: CorpusLexicon.load(folder),
            )
            return lexicon, True
        return self.memo(
            "lexicon_raw", self.store_stamp("source", "staging"), lambda: build_corpus_lexicon(self.store)
        ), False

    def lexicon_alignment(self) -> tuple[np.ndarray, np.ndarray]:
        """Row of the message table for each lexical message document, and row of the lexical conversation
        documents for each conversation of the table (-1 where absent): computed once per version."""
        lexicon, _ = self.lexicon()
        table = self.messages()

        def build():
            docs = np.fromiter(
                (table.index.get(m, -1) for m in lexicon.messages.ids),
                dtype=np.int64,
                count=lexicon.messages.n_docs,
            )
            position = {c: i for i, c in enumerate(lexicon.conversations.ids)}
            convs = np.fromiter(
                (position.get(c, -1) for c in table.conv_ids), dtype=np.int64, count=len(table.conv_ids)
            )
            return docs, convs

        return self.memo("lexicon_alignment", (id(lexicon), id(table)), build)

    def lexicon_in_table_order(self, docs: np.ndarray | None = None) -> bool:
        """Is lexical message document i message-table row i, for every row (the usual case: both are in
        conversation order)? `docs`: the alignment a query read (`lexicon_alignment`'s first array), so the
        answer is about the arrays it holds. The lexical path then takes the scores as they are."""
        if docs is None:
            docs, _ = self.lexicon_alignment()
        n = len(self.messages())
        # the alignment is held with its answer, so no newer alignment can be given the same id
        _, in_order = self.memo(
            "lexicon_in_table_order",
            (id(docs), n),
            lambda: (docs, len(docs) == n and bool(np.array_equal(docs, np.arange(n)))),
        )
        return in_order

    def vectors(self, family: str) -> FaissIndex | None:
        path = family_path(self.store, family)
        if not path.exists():
            return None
        stamp = (str(path.resolve()),)
        # mapped: a reader only searches, and a build swaps in a new file (a mapped old one stays valid)
        return self.memo(
            f"vectors:{family}", stamp, lambda: open_family_index(self.store, family, mapped=True)
        )

    def warm(self) -> None:
        """Load now what a first query would load (tables, lexicon, vector indexes, the query embedder), so
        a long-lived caller (the MCP server, at start) answers its first question at warm speed."""
        self.lexicon_in_table_order()  # and the alignment it is read from
        self.concepts()
        self.topics()
        self.speakers()
        self.segment_messages()
        self.facts()
        from memory_query.adjacency import adjacency_for, graph_loaded  # they read through a reader

        adjacency_for(self)
        graph_loaded(self)
        for family in ("messages", "segments", "concepts", "topics"):
            index = self.vectors(family)
            if index is not None and index.size:
                embedder_for_index(index).embed(["warm up"])
            if family == "messages" and index is not None and index.size:
                # what the concept path reads of a hub's evidence: the id map, and an IVF's direct map
                index.vectors(index.positions(index.ids[:1]))

    def graph(self):
        """The corpus's graph store when one has been loaded, else None."""
        from memory_core.graph import embedded_graph_path, open_graph

        path = embedded_graph_path(self.store)
        if not path.exists():
            return None

        def build():
            graph = open_graph(self.store)
            counts = graph.counts()
            return graph if counts.total_nodes else None

        return self.memo("graph", file_stamps([path]), build)


def embedder_for_index(index: FaissIndex) -> Embedder:
    """The embedder of an index's queries, from the spec saved in its metadata: the model that built it
    (so queries land in the same space), on the runtime that starts fastest (`build_query_embedder`: no
    torch for the default local model) — the CLI, the MCP server and the evals all embed queries here."""
    from memory_core.embeddings import build_query_embedder, index_embedder_spec

    return build_query_embedder(index_embedder_spec(index.meta, index.dim))


def _datetimes(values: list) -> np.ndarray:
    """Stored times as datetime64[us]: ISO text (SQLite) parsed at once, datetimes (Postgres) as they are."""
    if values and isinstance(values[0], str):
        return np.array([v.replace(" ", "T", 1) for v in values], dtype="datetime64[us]")
    return np.array(values, dtype="datetime64[us]")

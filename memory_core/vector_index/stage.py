"""The `indexes` stage: every vector index family of a corpus and its lexical (BM25) indexes, and the stage
report.

A family's index, and the lexical indexes, are built again only when they can differ: their figures and the
identity of the files they were saved to are kept with the write counters of the tables they read (and, for
messages derived from segments, the segments index they were derived from; memory_core.store.memo). While
both stand, the files on disk are that build's (on a 30k-message corpus 2.8 s of an unchanged rebuild's 9.6).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Literal

import memory_core.ontology as ontology
from memory_core import lexical
from memory_core.embeddings.base import Embedder
from memory_core.lexical import CorpusLexicon, build_corpus_lexicon, lexicon_dir
from memory_core.reports import Figures
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore
from memory_core.vector_index import faiss_index
from memory_core.vector_index import families as families_module
from memory_core.vector_index.faiss_index import IndexPolicy
from memory_core.vector_index.families import (
    FAMILIES,
    FamilyReport,
    build_family_index,
    build_message_index_from_segments,
)

# how the messages family gets its vectors (see build_message_index_from_segments)
MessageVectors = Literal["mixed", "segments", "text"]


def message_vector_source(families: Sequence[str], message_vectors: MessageVectors) -> MessageVectors:
    """How a build of `families` gets message vectors: "text" when it does not derive them from the segments
    family it builds (what a prefetch of own-text turns asks too, memory_assets/prefetch.py)."""
    if "messages" not in families or "segments" not in families:
        return "text"
    return message_vectors


@dataclass
class IndexesReport:
    embedding_model: str
    approximate_threshold: int
    families: list[FamilyReport]
    lexical_messages: int
    lexical_conversations: int
    lexical_concepts: int
    lexical_vocabulary: int
    lexical_seconds: float

    def as_metadata(self) -> Figures:
        reports = self.families
        return {
            "embedding_model": self.embedding_model,
            "lexical_messages": self.lexical_messages,
            "lexical_conversations": self.lexical_conversations,
            "lexical_concepts": self.lexical_concepts,
            "lexical_vocabulary": self.lexical_vocabulary,
            "lexical_seconds": round(self.lexical_seconds, 3),
            "approximate_threshold": self.approximate_threshold,
            **{f"{r.family}_size": r.size for r in reports},
            **{f"{r.family}_kind": r.kind for r in reports},
            "families": [{"family": r.family, **r.as_metadata()} for r in reports],
            "embedded": sum(r.embedded for r in reports),
            "reused": sum(r.reused for r in reports),
            "embed_seconds": round(sum(r.embed_seconds for r in reports), 3),
            "build_seconds": round(sum(r.build_seconds for r in reports), 3),
            "seconds": round(sum(r.seconds for r in reports), 3),
        }


def build_indexes(
    store: CorpusStore,
    embedder: Embedder,
    policy: IndexPolicy | None = None,
    families: Sequence[str] = FAMILIES,
    message_vectors: MessageVectors = "mixed",
    batch_size: int = 256,
    log: Callable[[str], None] | None = None,
) -> IndexesReport:
    """Build `families` in order (messages derived from the segments index unless `message_vectors` is
    `text` or segments are not built in this run), then the lexical indexes."""
    policy = policy or IndexPolicy()
    reports = []
    source = message_vector_source(families, message_vectors)
    for family in families:
        if family == "messages" and source != "text":
            build = partial(
                build_message_index_from_segments,
                store,
                embedder,
                policy,
                own_text_when_shared=source == "mixed",
            )
        else:
            build = partial(build_family_index, store, family, embedder, policy, batch_size=batch_size)
        report = family_index(store, family, _embedder_identity(embedder), policy, source, build)
        if log:
            log(
                f"{store.name}/{family}: {report.kind} index of {report.size} "
                f"({report.embedded} embedded, {report.reused} reused)"
            )
        reports.append(report)
    started = time.perf_counter()
    figures = lexical_indexes(store)
    return IndexesReport(
        embedding_model=embedder.model_name,
        approximate_threshold=policy.approximate_threshold,
        families=reports,
        **figures,
        lexical_seconds=time.perf_counter() - started,
    )


# what each family's index is built from (`families._source`); messages derived from segments also read them
FAMILY_TABLES = {
    "messages": (("source", "messages"),),
    "segments": (("staging", "segments"),),
    "concepts": (("staging", "canonical_concepts"),),
    "topics": (("staging", "topics"),),
}


def family_index(
    store: CorpusStore,
    family: str,
    embedder: dict,
    policy: IndexPolicy,
    source: MessageVectors,
    build: Callable[[], FamilyReport],
) -> FamilyReport:
    """`build()` the family's index unless the one on disk is the build of these tables and settings
    (`embedder`: its spec, which the index stores and a reader rebuilds its query embedder from)."""
    started = time.perf_counter()
    derived = family == "messages" and source != "text"
    tables = FAMILY_TABLES[family] + ((("staging", "segments"),) if derived else ())
    settings = (family, embedder, asdict(policy), source if family == "messages" else None)
    code = memo.code_digest(
        [families_module, faiss_index, ontology, store_schema, sys.modules[__name__]], *settings
    )
    key = memo.tables_key(store, tables, code)
    kept = memo.kept(store, f"index_{family}", key)
    if kept is not None and kept["files"] == _index_files(store, family, derived):
        reused = 0 if kept["report"]["source"] == "centroid" else kept["report"]["size"]  # (as a build says)
        return FamilyReport(
            **kept["report"], embedded=0, reused=reused, embed_seconds=0.0, build_seconds=0.0,
            seconds=time.perf_counter() - started,
        )  # fmt: skip
    report = build()
    if memo.tables_key(store, tables, code) == key:  # nothing it read moved meanwhile
        fields = ("family", "kind", "size", "dim", "params", "source", "path")
        result = {
            "report": {f: getattr(report, f) for f in fields},
            "files": _index_files(store, family, derived),
        }
        memo.keep(store, f"index_{family}", key, result)
    return report


def _embedder_identity(embedder: Embedder) -> dict:
    """The embedder's spec without its size (an API embedder learns it on its first call)."""
    return {k: v for k, v in embedder.spec().as_dict().items() if k != "dim"}


def _index_files(store: CorpusStore, family: str, derived: bool) -> list:
    """The build a family's path points to and its two files (and the segments index it was derived from)."""
    out = []
    for name in (family, "segments") if derived else (family,):
        real = Path(os.path.realpath(families_module.family_path(store, name)))
        out.append(
            [
                real.name,
                *(memo.file_identity(real / f) for f in (faiss_index.INDEX_FILE, faiss_index.IDS_FILE)),
            ]
        )
    return out


# what `build_corpus_lexicon` reads
LEXICON_TABLES = (("source", "messages"), ("staging", "canonical_concepts"), ("staging", "concept_evidence"))


def lexical_indexes(store: CorpusStore) -> dict[str, int]:
    """Build and save the corpus's lexical indexes unless the saved ones are this build's; their figures."""
    folder = lexicon_dir(store)
    code = memo.code_digest([lexical, store_schema, sys.modules[__name__]])
    key = memo.tables_key(store, LEXICON_TABLES, code)
    kept = memo.kept(store, "lexicon", key)
    if kept is not None and kept["files"] == _identities(folder):
        return kept["figures"]
    lexicon = build_corpus_lexicon(store)
    lexicon.save(folder)
    figures = {
        "lexical_messages": lexicon.messages.n_docs,
        "lexical_conversations": lexicon.conversations.n_docs,
        "lexical_concepts": lexicon.concepts.n_docs,
        "lexical_vocabulary": len(lexicon.messages.vocab),
    }
    if memo.tables_key(store, LEXICON_TABLES, code) == key:  # nothing it read moved meanwhile
        memo.keep(store, "lexicon", key, {"figures": figures, "files": _identities(folder)})
    return figures


def _identities(folder) -> list[str | None]:
    """Each saved file as (inode, mtime, size): another write or a deleted file is another identity."""
    return [memo.file_identity(folder / f"{name}.npz") for name in CorpusLexicon.FILES]

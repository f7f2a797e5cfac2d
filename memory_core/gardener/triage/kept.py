"""A triage over tables exactly as its last run left them is that run again: its figures are kept
(memory_core.store.memo) and an unchanged corpus's triage reads, scores and writes nothing.

Only an offline triage is kept: an LLM's review is asked afresh each run. The kept figures are those a second
run over the same tables reports — every proposal the run wrote is found unchanged, nothing goes stale — and
the manifest file is the one that run wrote (another file there is another key).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

import memory_core.concepts
import memory_core.gardener
import memory_core.ids
import memory_core.ontology
import memory_core.store.fingerprint
from memory_core.embeddings.base import Embedder
from memory_core.gardener.proposals import CATEGORIES
from memory_core.gardener.triage.run import MANIFEST_FILE, TriageReport, run_triage
from memory_core.gardener.triage.scoring import TriageConfig
from memory_core.llm.base import LLMClient
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore

_MEMO = "gardener_triage"
# every table an offline triage reads (a test pins it against the SQL it issues on a corpus with topics)
TRIAGE_TABLES = (
    ("source", "messages"),
    *(
        ("staging", t)
        for t in (
            "canonical_concepts", "concept_evidence", "lifecycle_proposals", "mentions", "topic_concept_links",
            "topic_segments", "topics",
        )
    ),
)  # fmt: skip


@dataclass
class KeptTriage:
    """The figures of a triage kept from the run that left the tables as they are (nothing was read)."""

    figures: dict

    @property
    def concepts(self) -> int:
        return int(self.figures["concepts"])

    @property
    def counts(self) -> dict[str, int]:
        return {k: int(self.figures.get(f"{k}_candidates", 0)) for k in CATEGORIES}

    def as_metadata(self) -> dict:
        return dict(self.figures)


def triage_unless_kept(
    store: CorpusStore,
    embedder: Embedder,
    config: TriageConfig | None = None,
    client: LLMClient | None = None,
    run_id: str | None = None,
    llm_batch_size: int = 10,
) -> TriageReport | KeptTriage:
    """`run_triage`, unless an offline triage of the same code and settings left the tables as they are.
    The caller holds the corpus write lock (so the tables after the run are what the next one reads)."""
    if client is not None:
        return run_triage(store, embedder, config, client, run_id=run_id, llm_batch_size=llm_batch_size)
    started = time.perf_counter()
    config = config or TriageConfig()
    code = memo.code_digest(
        [
            memory_core.gardener,
            memory_core.concepts,
            memory_core.ontology,
            memory_core.ids,
            memory_core.store.fingerprint,
            store_schema,
        ],
        config,
        embedder.vector_key(),
    )
    manifest = store.path(*MANIFEST_FILE)
    kept = memo.kept(store, _MEMO, memo.tables_key(store, TRIAGE_TABLES, code))
    if kept is not None and kept["manifest"] == memo.file_identity(manifest):
        figures = {**kept["figures"], "seconds": round(time.perf_counter() - started, 3)}
        return KeptTriage({**figures, "load_seconds": 0.0, "score_seconds": 0.0, "reused": True})
    report = run_triage(store, embedder, config, run_id=run_id)
    after = {"figures": as_rerun(report.as_metadata()), "manifest": memo.file_identity(manifest)}
    memo.keep(store, _MEMO, memo.tables_key(store, TRIAGE_TABLES, code), after)
    return report


def as_rerun(figures: Mapping[str, object]) -> dict:
    """What a second triage over the tables a run left reports: the proposals it wrote unchanged, none
    staled (decided ones stay decided)."""
    written = dict(figures.get("written") or {})  # type: ignore[call-overload]
    same = sum(int(written.pop(k, 0)) for k in ("inserted", "updated", "revived", "unchanged"))
    if "staled" in written:
        written["staled"] = 0
    if same:
        written["unchanged"] = same
    return {**figures, "written": written}

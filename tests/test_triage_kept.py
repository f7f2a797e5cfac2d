"""Layer 2: an offline triage over tables exactly as its last run left them is that run again — its figures
are the ones a real second run reports, nothing is read or written — and any change of what it reads, its
settings or its manifest file is a run."""

from __future__ import annotations

import os

from sqlalchemy import update

from memory_core.concepts.store import table_hash
from memory_core.gardener import TriageConfig, run_triage
from memory_core.gardener.triage import kept as triage_kept
from memory_core.gardener.triage import run as triage_run
from memory_core.gardener.triage.kept import TRIAGE_TABLES, KeptTriage, as_rerun, triage_unless_kept
from memory_core.store.schema import canonical_concepts, lifecycle_proposals
from tests.graph_corpus import build_small_corpus
from tests.test_gardener import EMBEDDER, SMALL, corpus  # noqa: F401 - the fixture
from tests.test_stage_memo import _counted, _tables_read

VARYING = {"seconds", "load_seconds", "score_seconds", "reused"}


def _figures(report) -> dict:
    return {k: v for k, v in report.as_metadata().items() if k not in VARYING}


def test_a_triage_reads_exactly_the_tables_it_is_kept_under(home, tmp_path):
    store = build_small_corpus(home, tmp_path).store  # with topics, so their tables are read too
    assert _tables_read(store, lambda: run_triage(store, EMBEDDER, SMALL)) == set(TRIAGE_TABLES)


def test_an_unchanged_triage_is_its_last_run_again(corpus, monkeypatch):  # noqa: F811
    store, _ = corpus
    first = triage_unless_kept(store, EMBEDDER, SMALL)
    assert not isinstance(first, KeptTriage) and first.written["inserted"] == 4
    runs = _counted(monkeypatch, triage_kept, "run_triage")
    table = table_hash(store, [lifecycle_proposals])
    again = triage_unless_kept(store, EMBEDDER, SMALL)
    assert isinstance(again, KeptTriage) and not runs and again.as_metadata()["reused"]
    assert table_hash(store, [lifecycle_proposals]) == table
    assert again.concepts == first.concepts and again.counts == first.counts
    # the kept figures are what a real second run reports
    real = run_triage(store, EMBEDDER, SMALL)
    assert real.written["unchanged"] == 4 and _figures(again) == _figures(real)
    assert as_rerun(real.as_metadata())["written"] == real.as_metadata()["written"]


def test_a_change_of_tables_settings_or_manifest_is_a_run(corpus, monkeypatch):  # noqa: F811
    store, ids = corpus
    triage_unless_kept(store, EMBEDDER, SMALL)
    runs = _counted(monkeypatch, triage_kept, "run_triage")
    stricter = TriageConfig(macro_spread_ref=3, macro_support_ref=3, noise_min_score=0.95)
    staled = triage_unless_kept(store, EMBEDDER, stricter)
    assert len(runs) == 1 and staled.written["staled"] == 1
    assert isinstance(triage_unless_kept(store, EMBEDDER, stricter), KeptTriage)
    # a concept edited: read again
    with store.staging.begin() as conn:
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == ids["garden"])
            .values(title=canonical_concepts.c.title + " plot")
        )
    assert not isinstance(triage_unless_kept(store, EMBEDDER, stricter), KeptTriage) and len(runs) == 2
    # the manifest touched beside the store: the triage runs (and writes it) again
    assert isinstance(triage_unless_kept(store, EMBEDDER, stricter), KeptTriage) and len(runs) == 2
    manifest = store.path(*triage_run.MANIFEST_FILE)
    os.utime(manifest, ns=(1, 1))
    assert not isinstance(triage_unless_kept(store, EMBEDDER, stricter), KeptTriage) and len(runs) == 3
    assert os.stat(manifest).st_mtime_ns != 1

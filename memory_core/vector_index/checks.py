"""Contracts of the `indexes` stage, evaluated on the stored indexes and their source tables (the asset
checks wrap these)."""

from __future__ import annotations

import numpy as np

from memory_core.reports import CheckResult
from memory_core.store.db import CorpusStore
from memory_core.vector_index.families import FAMILIES, open_family_index, source_ids


def index_ids_match_sources(store: CorpusStore) -> CheckResult:
    """Each family's id map holds exactly the ids of its source table, once each, and matches the index
    size."""
    rows, passed = [], True
    for family in FAMILIES:
        index = open_family_index(store, family)
        want = set(source_ids(store, family))
        if index is None:
            rows.append({"family": family, "index": "missing", "source": len(want)})
            passed = False
            continue
        have = index.ids
        ok = len(have) == len(set(have)) == index.size and set(have) == want
        passed &= ok
        rows.append(
            {
                "family": family,
                "index": index.size,
                "source": len(want),
                "missing_from_index": len(want - set(have)),
                "not_in_source": len(set(have) - want),
                "ok": ok,
            }
        )
    return CheckResult(passed, {"families": rows})


def index_finds_its_own_vectors(store: CorpusStore, sample: int = 20, k: int = 10) -> CheckResult:
    """A stored vector searched back finds its own id among the top `k` (a seeded sample per family)."""
    rows, passed = [], True
    for family in FAMILIES:
        index = open_family_index(store, family)
        if index is None or index.size == 0:
            continue
        positions = np.random.default_rng(0).choice(index.size, size=min(sample, index.size), replace=False)
        found = index.search(index.vectors(positions), k).ids
        hits = sum(index.ids[p] in row for p, row in zip(positions, found, strict=True))
        passed &= hits == len(positions)
        rows.append({"family": family, "kind": index.kind, "sampled": len(positions), "found_self": hits})
    return CheckResult(passed, {"families": rows})

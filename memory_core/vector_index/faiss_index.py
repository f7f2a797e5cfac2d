"""FAISS indexes: exact inner product (flat) for small sets, IVF (or HNSW) past a measured size threshold.

On disk an index is a folder `<name>` that is a symlink to an immutable build folder
`.builds/<name>-<build id>/` holding `index.faiss` and `ids.json` (the id map and how it was built). A new
build is written completely, then the symlink is replaced with `os.replace` (atomic), so a reader resolves
the link once and reads the index and the id map of the same build: the old or the new, never half. The
previous build is kept for readers still loading it; older ones are removed.

Threshold (measured by `evals/benchmarks/bench_vector_index.py`: 384-d clustered vectors, this 2-core shared
machine, one query at a time, recall@10 against exact search): a flat search costs ~0.8 ms at 10k vectors,
2-4 ms at 30k and 19-36 ms at 100k. HNSW (M=32, efSearch=128) answers in 0.25-0.6 ms at every size with
recall@10 of 0.98-1.0 on both data presets, and builds in ~4 s at 10k, ~10 s at 30k, ~40-50 s at 100k.
IVF (nlist=2·√n) is as fast but needs nprobe=32 for recall ≥ 0.93 on overlapping clusters and trains
about as long, so HNSW is the approximate default. Flat stays below 20k vectors, where it is exact and
still ~1-2 ms per query (a query_memory touches several indexes inside a 50 ms budget).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from memory_core.blas import faiss_threads
from memory_core.vector_index.base import SearchResult, VectorIndex

DEFAULT_APPROXIMATE_THRESHOLD = 20_000
INDEX_FILE = "index.faiss"
IDS_FILE = "ids.json"
BUILDS = ".builds"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class IndexPolicy:
    """Which kind of index to build for n vectors, and its parameters."""

    kind: Literal["auto", "flat", "ivf", "hnsw"] = "auto"
    approximate_threshold: int = DEFAULT_APPROXIMATE_THRESHOLD
    approximate_kind: Literal["ivf", "hnsw"] = "hnsw"
    nprobe: int = 16
    ivf_train_iterations: int = 20
    hnsw_m: int = 32
    hnsw_ef_construction: int = 64
    hnsw_ef_search: int = 128
    seed: int = 0

    def kind_for(self, n: int) -> str:
        if self.kind != "auto":
            return self.kind
        return self.approximate_kind if n >= self.approximate_threshold else "flat"

    @staticmethod
    def nlist_for(n: int) -> int:
        # ~2·sqrt(n) lists, and at least 39 training points per list (FAISS's k-means floor)
        return max(1, min(int(round(2 * math.sqrt(n))), n // 39))


class _Prefetch(threading.Thread):
    def __init__(self, path: Path, chunk: int):
        super().__init__(name=f"prefetch:{path.parent.name}", daemon=True)
        self.path, self.chunk = path, chunk
        self.bytes_read = 0

    def run(self) -> None:
        try:
            self.bytes_read = read_once(self.path, self.chunk)
        except OSError:
            pass  # the build folder was removed meanwhile: the searches read what they need


def read_once(path: Path, chunk: int = 8 << 20) -> int:
    """Read a file through once, into one reused buffer (its pages land in the page cache); bytes read."""
    buffer, total = bytearray(chunk), 0
    with open(path, "rb", buffering=0) as fh:
        while n := fh.readinto(buffer):
            total += n
    return total


def prefetch_in_background(path: Path, chunk: int = 8 << 20) -> threading.Thread | None:
    """Read a memory-mapped file once, in a daemon thread, so its pages are in the page cache before the
    searches touch them. A mapped HNSW search visits a few thousand vectors scattered over the file, and
    each one not yet read is a disk read: at 1M messages (a 1.7 GB index) 300 queries after a cold start
    took a p95 of 128 ms in the message index alone, against 5 ms with the file read ahead
    (`posix_fadvise(WILLNEED)` read nothing ahead here). Skipped for a file larger than a quarter of the
    machine's memory."""
    try:
        size = path.stat().st_size
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (OSError, ValueError, AttributeError):  # no sysconf (Windows) or no such name
        return None
    if size > memory // 4:
        return None
    thread = _Prefetch(path, chunk)
    thread.start()
    return thread


def _as_matrix(vectors: np.ndarray, dim: int | None = None) -> np.ndarray:
    matrix = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32))
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    if matrix.ndim != 2 or (dim is not None and matrix.shape[1] != dim):
        raise ValueError(f"vectors must be an (n, {dim or 'dim'}) matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("vectors contain NaN or infinity")
    return matrix


@dataclass
class FaissIndex(VectorIndex):
    dim: int
    policy: IndexPolicy = field(default_factory=IndexPolicy)
    #: free-form facts stored with the id map (family, model, source, per-id content keys, ...)
    meta: dict = field(default_factory=dict)
    kind: str = "flat"
    _index: object = None
    _ids: list[str] = field(default_factory=list)
    _positions: dict[str, int] | None = field(default=None, repr=False, compare=False)
    # one index serves a reader's threads (the MCP server, a ReaderPool): FAISS fills an IVF's direct map
    # after marking it made, so a second thread must wait for the first, not trust the mark
    _direct_map_made: bool = field(default=False, repr=False, compare=False)
    _direct_map_lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    params: dict = field(default_factory=dict)
    build_seconds: float = 0.0

    # building ---------------------------------------------------------------------------------------
    def build(self, ids: Sequence[str], vectors: np.ndarray, keys: Sequence[str] | None = None) -> None:
        import faiss

        ids = [str(i) for i in ids]
        matrix = _as_matrix(vectors, self.dim) if len(ids) else np.zeros((0, self.dim), dtype=np.float32)
        if matrix.shape[0] != len(ids):
            raise ValueError(f"{len(ids)} ids for {matrix.shape[0]} vectors")
        if len(set(ids)) != len(ids):
            raise ValueError("ids must be unique")
        if keys is not None and len(keys) != len(ids):
            raise ValueError(f"{len(keys)} keys for {len(ids)} ids")
        started = time.perf_counter()
        n = len(ids)
        self.kind = self.policy.kind_for(n)
        if self.kind == "ivf" and n < 39:
            self.kind = "flat"  # too few points to train even one list
        if self.kind == "flat":
            index = faiss.IndexFlatIP(self.dim)
            self.params = {}
        elif self.kind == "ivf":
            nlist = IndexPolicy.nlist_for(n)
            quantizer = faiss.IndexFlatIP(self.dim)
            index = faiss.IndexIVFFlat(quantizer, self.dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.cp.niter = self.policy.ivf_train_iterations
            index.cp.seed = self.policy.seed
            rng = np.random.default_rng(self.policy.seed)
            sample = matrix if n <= nlist * 64 else matrix[np.sort(rng.choice(n, nlist * 64, replace=False))]
            index.train(sample)
            index.nprobe = min(self.policy.nprobe, nlist)
            self.params = {"nlist": nlist, "nprobe": index.nprobe, "trained_on": int(sample.shape[0])}
        elif self.kind == "hnsw":
            index = faiss.IndexHNSWFlat(self.dim, self.policy.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.policy.hnsw_ef_construction
            index.hnsw.efSearch = self.policy.hnsw_ef_search
            self.params = {
                "m": self.policy.hnsw_m,
                "ef_construction": self.policy.hnsw_ef_construction,
                "ef_search": self.policy.hnsw_ef_search,
            }
        else:
            raise ValueError(f"unknown index kind {self.kind!r}")
        if n:
            index.add(matrix)
        self._index = index
        self._ids, self._positions, self._direct_map_made = ids, None, False
        if keys is not None:
            self.meta = {**self.meta, "keys": list(keys)}
        self.build_seconds = time.perf_counter() - started

    # reading ----------------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        return len(self._ids)

    @property
    def ids(self) -> list[str]:
        return self._ids

    def search(self, queries: np.ndarray, k: int) -> SearchResult:
        matrix = _as_matrix(queries, self.dim)
        if k < 1:
            raise ValueError(f"k must be at least 1, not {k}")
        if self.size == 0 or self._index is None:
            return SearchResult([[] for _ in range(matrix.shape[0])], [[] for _ in range(matrix.shape[0])])
        k = min(k, self.size)
        with faiss_threads(1) if matrix.shape[0] <= 8 else contextlib.nullcontext():
            scores, positions = self._index.search(matrix, k)
        out_ids, out_scores = [], []
        for row_pos, row_scores in zip(positions, scores, strict=True):
            keep = row_pos >= 0  # an approximate index can return fewer than k
            out_ids.append([self._ids[p] for p in row_pos[keep]])
            out_scores.append([float(s) for s in row_scores[keep]])
        return SearchResult(out_ids, out_scores)

    def positions(self, ids: Sequence[str]) -> list[int | None]:
        """Each id's position in the index (None for one it does not hold); the map is built on first use."""
        if self._positions is None:
            self._positions = {item: p for p, item in enumerate(self._ids)}  # ids never change once built
        return [self._positions.get(item) for item in ids]

    def vectors(self, positions: Sequence[int]) -> np.ndarray:
        """Stored vectors by position (to reuse unchanged items in a rebuild instead of re-embedding, and to
        compare a few stored items with a query without searching)."""
        import faiss

        if not len(positions):
            return np.zeros((0, self.dim), dtype=np.float32)
        if self.kind == "ivf" and not self._direct_map_made:
            with self._direct_map_lock:
                if not self._direct_map_made:  # made once: it walks every inverted list
                    faiss.extract_index_ivf(self._index).make_direct_map()
                    self._direct_map_made = True
        return self._index.reconstruct_batch(np.asarray(positions, dtype=np.int64))

    def describe(self) -> dict:
        return {"kind": self.kind, "size": self.size, "dim": self.dim, **self.params}

    # files ------------------------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        import faiss

        path = Path(path)
        if path.exists() and not path.is_symlink():
            raise FileExistsError(f"{path} exists and is not an index link; refusing to replace it")
        build_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
        builds = path.parent / BUILDS
        build_dir = builds / f"{path.name}-{build_id}"
        build_dir.mkdir(parents=True)
        previous = os.path.realpath(path) if path.is_symlink() else None
        try:
            faiss.write_index(self._index, str(build_dir / INDEX_FILE))
            ids_doc = {
                "format": FORMAT_VERSION,
                "build_id": build_id,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "kind": self.kind,
                "dim": self.dim,
                "size": self.size,
                "params": self.params,
                "policy": asdict(self.policy),
                "build_seconds": round(self.build_seconds, 4),
                "meta": self.meta,
                "ids": self._ids,
            }
            with (build_dir / IDS_FILE).open("w", encoding="utf-8") as fp:
                json.dump(ids_doc, fp)
                fp.flush()
                os.fsync(fp.fileno())
            link = path.parent / f".{path.name}.{build_id}.link"
            os.symlink(os.path.join(BUILDS, build_dir.name), link)
            os.replace(link, path)
        except BaseException:
            shutil.rmtree(build_dir, ignore_errors=True)
            raise
        keep = {build_dir.name, Path(previous).name if previous else None}
        for old in builds.glob(f"{path.name}-*"):
            if old.name not in keep and old.name.startswith(f"{path.name}-"):
                shutil.rmtree(old, ignore_errors=True)

    @classmethod
    def load(cls, path: Path, mapped: bool = False) -> FaissIndex:
        """`mapped`: the vectors of a flat or HNSW index memory-mapped from the file instead of read (a
        searching reader's cold start; a search touches only the pages it visits)."""
        import faiss

        real = Path(os.path.realpath(path))  # resolve once: both files come from the same build
        if not (real / IDS_FILE).is_file():
            raise FileNotFoundError(f"no vector index at {path}")
        doc = json.loads((real / IDS_FILE).read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT_VERSION:
            raise ValueError(f"{path}: unsupported index format {doc.get('format')!r}")
        flags = getattr(faiss, "IO_FLAG_MMAP_IFC", 0) if mapped else 0
        index = faiss.read_index(str(real / INDEX_FILE), flags)
        if mapped:
            prefetch_in_background(real / INDEX_FILE)
        if index.ntotal != len(doc["ids"]):
            raise ValueError(f"{path}: index holds {index.ntotal} vectors but its id map {len(doc['ids'])}")
        out = cls(dim=doc["dim"], policy=IndexPolicy(**doc["policy"]), meta=doc.get("meta", {}))
        out.kind, out._index, out._ids, out.params = doc["kind"], index, doc["ids"], doc.get("params", {})
        out.build_seconds = doc.get("build_seconds", 0.0)
        if out.kind == "ivf":
            index.nprobe = out.params.get("nprobe", out.policy.nprobe)
        elif out.kind == "hnsw":
            index.hnsw.efSearch = out.params.get("ef_search", out.policy.hnsw_ef_search)
        return out

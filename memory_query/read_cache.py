"""The read cache: what a cold reader needs at query time, saved by the pipeline as compact arrays next to
the FAISS indexes, so a fresh process (`memory-os query`, the MCP server's first question) does not rebuild
it from 100k SQLite rows and 95k graph edges.

Each part is one uncompressed `.npz` (`indexes/read_cache/<part>.npz`, swapped in atomically) holding a
`meta` entry — the format number and the stamp of what the part was derived from — beside its arrays:

- `messages`: the message table (ids, conversations, positions, roles, authors, times, source refs),
  stamped with the source store's version (`CorpusStore.version`);
- `segments`: current segment → message rows (rows of that table), stamped with source + staging versions;
- `adjacency`: the graph walks (RELATED_TO, active EVIDENCE_FOR, NEXT/PREVIOUS), stamped with the
  embedded graph file's stamp;
- `lexicon`: the three BM25 indexes with their id maps and vocabularies as arrays (the index files keep
  them as JSON text, whose parse is most of their load), stamped with the index files' stamps.

A reader uses a part only when its stamp equals the stamp it reads now, and otherwise loads from the stores
as it did before the cache (a read never writes it). Texts stay in SQLite. Strings are saved as one UTF-8
blob joined by NUL (splitting it is one call), lookup keys as sorted byte arrays (a lookup is a binary
search: nothing is built for the keys a query never asks about).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import numpy as np

FORMAT = 1
PARTS = ("messages", "segments", "adjacency", "lexicon")
_SEP = "\x00"

log = logging.getLogger(__name__)


def read_cache_dir(store) -> Path:
    """Where a corpus's read cache lives (beside its FAISS indexes; written by the pipeline only)."""
    return store.dir / "indexes" / "read_cache"


def part_path(store, part: str) -> Path:
    return read_cache_dir(store) / f"{part}.npz"


def jsonable(stamp) -> list:
    """A stamp as it reads back from the file's meta (tuples are lists)."""
    return json.loads(json.dumps(stamp))


# ------------------------------------------------------------------------------------------ strings
def pack_strings(prefix: str, values: Sequence[str | None]) -> dict[str, np.ndarray]:
    """`values` as one NUL-joined UTF-8 blob and a mask of the Nones."""
    none = np.fromiter((v is None for v in values), dtype=bool, count=len(values))
    texts = ["" if v is None else v for v in values]
    if any(_SEP in t for t in texts):
        raise ValueError(f"{prefix}: a value holds NUL, which the read cache uses as separator")
    blob = _SEP.join(texts).encode("utf-8")
    return {f"{prefix}.blob": np.frombuffer(blob, dtype=np.uint8), f"{prefix}.none": none}


def unpack_strings(arrays: Mapping[str, np.ndarray], prefix: str) -> list:
    none = arrays[f"{prefix}.none"]
    if not len(none):
        return []
    values: list = arrays[f"{prefix}.blob"].tobytes().decode("utf-8").split(_SEP)
    if len(values) != len(none):
        raise ValueError(f"{prefix}: {len(values)} strings for {len(none)} rows")
    if none.any():
        for i in np.flatnonzero(none):
            values[i] = None
    return values


def sorted_keys(keys: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Keys as a sorted byte array (binary-searchable) and the order that sorts them."""
    encoded = np.array([k.encode("utf-8") for k in keys], dtype=bytes) if len(keys) else np.array([], "S1")
    order = np.argsort(encoded, kind="stable")
    return encoded[order], order


# ------------------------------------------------------------------------------------------ files
def save_part(store, part: str, stamp, arrays: Mapping[str, np.ndarray]) -> Path:
    """Write one part atomically (readers see the old or the new file, never half of one)."""
    path = part_path(store, part)
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = np.asarray(json.dumps({"format": FORMAT, "part": part, "stamp": jsonable(stamp)}))
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".npz", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fp:
            np.savez(fp, meta=meta, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_part(store, part: str, stamp) -> dict[str, np.ndarray] | None:
    """The part's arrays when its file exists and was derived from exactly `stamp`, else None (missing or
    stale: silently; unreadable: one warning line). Never writes."""
    path = part_path(store, part)
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if meta.get("format") != FORMAT or meta.get("stamp") != jsonable(stamp):
                return None
            return {name: z[name] for name in z.files if name != "meta"}
    except Exception as exc:  # a truncated or corrupt file is a cache miss, not a failed query
        log.warning(
            "read cache %s unreadable (%s: %s); loading from the stores", path, type(exc).__name__, exc
        )
        return None


def decode_part(part: str, arrays: dict[str, np.ndarray], decode):
    """`decode(arrays)`, or None with one warning line when the arrays are not what it expects (a file
    written by another layout of the same format): a cache miss, not a failed query."""
    try:
        return decode(arrays)
    except Exception as exc:
        log.warning("read cache part %s does not decode (%s: %s); loading from the stores", part, type(exc).__name__, exc)  # fmt: skip
        return None


# ------------------------------------------------------------------------------------------ lookups
class SortedLookup(Mapping):
    """A read-only mapping over sorted byte keys: key → one string (`indptr` None), or key → a list of
    (string, weight) in saved order (`indptr` delimits each key's run of `values` / `weights`)."""

    def __init__(self, keys: np.ndarray, values: np.ndarray, indptr=None, weights=None):
        self._keys, self._values, self._indptr, self._weights = keys, values, indptr, weights

    @staticmethod
    def encode(mapping: Mapping[str, str]) -> dict[str, np.ndarray]:
        """The arrays of a key → string mapping."""
        keys, order = sorted_keys(list(mapping))
        values = list(mapping.values())
        return {"keys": keys, "values": _bytes([values[i] for i in order])}

    @staticmethod
    def encode_grouped(mapping: Mapping[str, list[tuple[str, float]]]) -> dict[str, np.ndarray]:
        """The arrays of a key → [(string, weight)] mapping."""
        keys, order = sorted_keys(list(mapping))
        groups = list(mapping.values())
        runs = [groups[i] for i in order]
        indptr = np.zeros(len(runs) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(r) for r in runs])
        flat = [pair for run in runs for pair in run]
        return {
            "keys": keys,
            "values": _bytes([v for v, _ in flat]),
            "weights": np.array([w for _, w in flat], dtype=np.float64),
            "indptr": indptr,
        }

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> SortedLookup:
        def get(name):
            return arrays.get(f"{prefix}.{name}")

        return cls(get("keys"), get("values"), get("indptr"), get("weights"))

    def _row(self, key: str) -> int | None:
        encoded = key.encode("utf-8")
        i = int(np.searchsorted(self._keys, encoded))
        return i if i < len(self._keys) and self._keys[i] == encoded else None

    def __getitem__(self, key: str):
        i = self._row(key) if isinstance(key, str) else None
        if i is None:
            raise KeyError(key)
        if self._indptr is None:
            return self._values[i].decode("utf-8")
        return self._run(i, None)

    def first(self, key: str, limit: int) -> list[tuple[str, float]]:
        """The first `limit` (string, weight) pairs of a grouped key (none for an absent key), decoding
        only those: a concept with thousands of evidence messages is walked 50 deep."""
        i = self._row(key) if isinstance(key, str) else None
        return [] if i is None else self._run(i, limit)

    def _run(self, i: int, limit: int | None) -> list[tuple[str, float]]:
        a, b = int(self._indptr[i]), int(self._indptr[i + 1])
        b = b if limit is None else min(b, a + limit)
        return [
            (v.decode("utf-8"), float(w)) for v, w in zip(self._values[a:b], self._weights[a:b], strict=True)
        ]

    def __contains__(self, key) -> bool:
        return isinstance(key, str) and self._row(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (k.decode("utf-8") for k in self._keys)

    def __len__(self) -> int:
        return len(self._keys)


def prefixed(prefix: str, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {f"{prefix}.{name}": value for name, value in arrays.items()}


def _bytes(values: list[str]) -> np.ndarray:
    return np.array([v.encode("utf-8") for v in values], dtype=bytes) if values else np.array([], "S1")


class SegmentMembers(Mapping):
    """Current segment id → message rows, over the saved CSR arrays (the same mapping the reader builds
    from the staging tables)."""

    def __init__(self, ids: list[str], indptr: np.ndarray, rows: np.ndarray):
        self._ids, self._indptr, self._rows = ids, indptr, rows
        self._position: dict[str, int] | None = None

    @staticmethod
    def encode(members: Mapping[str, list[int]]) -> dict[str, np.ndarray]:
        ids = list(members)
        indptr = np.zeros(len(ids) + 1, dtype=np.int64)
        indptr[1:] = np.cumsum([len(members[s]) for s in ids])
        rows = np.fromiter((r for s in ids for r in members[s]), dtype=np.int64, count=int(indptr[-1]))
        return {**pack_strings("segment_ids", ids), "segment_indptr": indptr, "segment_rows": rows}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray]) -> SegmentMembers:
        return cls(unpack_strings(arrays, "segment_ids"), arrays["segment_indptr"], arrays["segment_rows"])

    def __getitem__(self, segment_id: str) -> list[int]:
        if self._position is None:
            self._position = {s: i for i, s in enumerate(self._ids)}
        i = self._position[segment_id]
        return self._rows[self._indptr[i] : self._indptr[i + 1]].tolist()

    def items(self) -> list[tuple[str, list[int]]]:  # every segment at once (explore_node's Message>Segment)
        rows, ptr = self._rows.tolist(), self._indptr.tolist()
        return [(s, rows[ptr[i] : ptr[i + 1]]) for i, s in enumerate(self._ids)]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ids)

    def __len__(self) -> int:
        return len(self._ids)


def encode_lexicon(lexicon) -> dict[str, np.ndarray]:
    """A `CorpusLexicon`'s indexes as arrays: each one's CSR weights, ids and vocabulary."""
    out: dict[str, np.ndarray] = {}
    for name in lexicon.FILES:
        index = getattr(lexicon, name)
        m = index.weights
        words = list(index.vocab)
        out.update(
            prefixed(
                name,
                {
                    "data": m.data,
                    "indices": m.indices,
                    "indptr": m.indptr,
                    "shape": np.asarray(m.shape, dtype=np.int64),
                    "columns": np.fromiter(index.vocab.values(), dtype=np.int64, count=len(words)),
                },
            )
        )
        out.update(pack_strings(f"{name}.ids", index.ids))
        out.update(pack_strings(f"{name}.words", words))
    return out


def decode_lexicon(arrays: Mapping[str, np.ndarray]):
    from scipy.sparse import csr_matrix

    from memory_core.lexical import CorpusLexicon, LexicalIndex

    indexes = []
    for name in CorpusLexicon.FILES:

        def get(part, name=name):
            return arrays[f"{name}.{part}"]

        weights = csr_matrix((get("data"), get("indices"), get("indptr")), shape=tuple(get("shape")))
        words = unpack_strings(arrays, f"{name}.words")
        vocab = dict(zip(words, get("columns").tolist(), strict=True))
        indexes.append(LexicalIndex(unpack_strings(arrays, f"{name}.ids"), vocab, weights))
    return CorpusLexicon(*indexes)

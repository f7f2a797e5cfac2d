"""Embedded graph store: one LadybugDB (the maintained Kùzu fork, Cypher) database file per corpus.

A full `load` spools the nodes and edges into CSV files (one per label and per edge type/endpoint pair, in
parts a COPY can hold in the buffer pool), creates a fresh database at a temporary path, bulk-loads it with
`COPY FROM`, a statement per part (row-by-row `CREATE` of
edges is two orders of magnitude slower: see `evals/benchmarks/bench_graph_load.py`), checkpoints it into a single
file and renames it over the current one. A reader that opened the old file keeps reading the old version
(the old inode lives on while it is open); readers here notice the new file (inode change) on their next
call and reopen, so nobody sees half a graph. Small writes (`upsert`, `delete_label`) copy the current file,
change the copy and rename it in the same way. Two writers would lose one's swap: writers hold the corpus
write lock (`CorpusStore.write_lock`), as the assets do.
"""

from __future__ import annotations

import csv
import hashlib
import os
import shutil
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from datetime import datetime
from pathlib import Path

from memory_core.graph.base import (
    EdgeBatch,
    GraphCounts,
    GraphStore,
    LoadReport,
    LoadTally,
    Neighbour,
    Node,
    NodeBatch,
    check_direction,
    check_hops,
    check_limit,
    check_order_by,
    clean_edge_rows,
    clean_node_rows,
    fact_state_where,
    neighbour_groups,
    sort_neighbours,
)
from memory_core.graph.schema import (
    EDGE_TYPES,
    NODE_TYPES,
    EdgeType,
    NodeType,
    Prop,
    edge_type,
    edge_types_or_all,
    ident,
    node_type,
    q,
    read_props,
)

_TYPES = {
    "STRING": "STRING",
    "INT64": "INT64",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
}
# Ladybug reserves max_db_size of virtual address space per open database (8 TiB by default): a process
# holding a few dozen corpora open (an eval run, an MCP server) ran out of address space at ~15. 64 GiB is
# far above the design scale's graph (2.4M edges) and lets thousands be open at once.
_MAX_DB_SIZE = 1 << 36
_READ_POOL = 256 * 1024 * 1024
_WRITE_POOL = 1024 * 1024 * 1024
_EDGE_SLICE = 200_000  # edges a read of one edge type holds at once (`iter_edges`)
# A COPY holds several times its file's bytes in the buffer pool while it builds its table: a 481 MB
# EVIDENCE_FOR file (2.3M edges, 1M messages) failed with 1.7 GiB and loaded with 2 GiB. A file is copied in
# parts of at most an eighth of the largest pool, and the pool is sized to eight times its largest part.
_COPY_NEED = 8
_PART_CHECK_ROWS = 1000  # rows written between two looks at a part's size


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows) or the name unknown
        return None


def _pool_cap(floor: int) -> int:
    memory = _physical_memory()
    return max(floor, memory // 4) if memory else floor


def buffer_pool(data_bytes: int, floor: int) -> int:
    """The buffer pool for a database holding about `data_bytes`: `floor`, or as large as the data where
    that is more, at most a quarter of the machine's memory. A fixed 256 MiB reader could not stream one edge
    type of a 1M-message graph (780 MB file: CONTAINS_MESSAGE, 1.02M edges, needed ~0.5 GB); a small
    corpus's reader stays at the floor, so a process holding many corpora open stays small."""
    return max(floor, min(int(data_bytes), _pool_cap(floor)))


def copy_part_bytes() -> int:
    """The most a spooled file part holds: a COPY of it fits the largest pool a load may take."""
    return _pool_cap(_WRITE_POOL) // _COPY_NEED


def load_pool(part_sizes: Iterable[int]) -> int:
    """The write pool of a bulk load of spooled parts of these sizes: the data itself (a checkpoint writes
    it all), and `_COPY_NEED` times the largest part (one COPY's hold)."""
    sizes = list(part_sizes)
    return buffer_pool(max(sum(sizes), _COPY_NEED * max(sizes, default=0)), _WRITE_POOL)


def _columns(props: tuple[Prop, ...]) -> str:
    return "".join(f", {q(p.name)} {_TYPES[p.type]}" for p in props)


def schema_ddl() -> list[str]:
    """CREATE statements of every node and rel table of the graph ontology."""
    stmts = [
        f"CREATE NODE TABLE {q(nt.label)}(id STRING{_columns(nt.props)}, PRIMARY KEY(id))"
        for nt in NODE_TYPES.values()
    ]
    for et in EDGE_TYPES.values():
        pairs = ", ".join(f"FROM {q(s)} TO {q(d)}" for s, d in et.endpoints)
        stmts.append(f"CREATE REL TABLE {q(et.type)}({pairs}{_columns(et.props)})")
    return stmts


def _csv_value(value: object) -> object:
    # an empty field is NULL for the CSV reader; empty non-nullable strings come back as "" (read_props)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, float):
        return repr(value)
    return value


class _Spool:
    """CSV files under a temporary folder, one per node label and per (edge type, source, target), each in
    parts of about `part_bytes` (a part is closed once it holds that much, looked at every
    `_PART_CHECK_ROWS` rows, and the next rows start another with its own header): one COPY per part keeps
    a large edge type's load inside the buffer pool."""

    def __init__(self, folder: Path, part_bytes: int):
        self.folder = folder
        self.part_bytes = part_bytes
        self._open: dict[tuple, tuple] = {}  # key -> (fp, writer) of its current part
        self.parts: dict[tuple, list[Path]] = {}
        self.multiline: set[tuple] = set()  # files holding a quoted newline: the parallel reader refuses them

    def _writer(self, key: tuple, header: list[str]):
        if key in self._open:
            fp, writer = self._open[key]
            if fp.tell() < self.part_bytes:
                return writer
            fp.close()
        paths = self.parts.setdefault(key, [])
        # the first part keeps the name a file of one part always had
        name = "__".join(key) + (f".part{len(paths)}" if paths else "") + ".csv"
        paths.append(self.folder / name)
        fp = paths[-1].open("w", encoding="utf-8", newline="")
        writer = csv.writer(fp)
        writer.writerow(header)
        self._open[key] = (fp, writer)
        return writer

    def write(self, key: tuple, header: list[str], rows: list[list]) -> None:
        for start in range(0, len(rows), _PART_CHECK_ROWS):  # a batch may be larger than a part
            writer = self._writer(key, header)
            for row in rows[start : start + _PART_CHECK_ROWS]:
                values = [_csv_value(v) for v in row]
                if key not in self.multiline and any(
                    isinstance(v, str) and ("\n" in v or "\r" in v) for v in values
                ):
                    self.multiline.add(key)
                writer.writerow(values)

    def close(self) -> dict[tuple, list[Path]]:
        for fp, _ in self._open.values():
            fp.close()
        self._open.clear()
        return self.parts


def _copy_options(key: tuple, spool: _Spool, endpoints: tuple[str, str] | None) -> str:
    # the dialect Python's csv writer uses, said explicitly: left to detect it from the first lines, the
    # reader took a file whose first 879 rows had no quoted field for one without quoting, and split the
    # first quoted text with a comma ("I really love sailing on weekends, it keeps me sane") in two
    opts = ["HEADER=true", "DELIM=','", "QUOTE='\"'", "ESCAPE='\"'", "AUTO_DETECT=false"]
    if key in spool.multiline:
        opts.append("PARALLEL=false")
    if endpoints is not None:
        opts.append(f'from="{ident(endpoints[0])}"')
        opts.append(f'to="{ident(endpoints[1])}"')
    return "(" + ", ".join(opts) + ")"


def _library_version() -> str:
    """The LadybugDB release (another may store the same export differently, or not read this file)."""
    import ladybug

    return str(getattr(ladybug, "__version__", ""))


def _export_digest(files: dict[tuple, list[Path]], spool: _Spool) -> str:
    """sha256 of what a load would copy: the schema, and each spooled file with its COPY options. A file's
    parts hash as the one file they make (each part's repeated header left out), so where the parts were cut
    (a machine with other memory) does not make an unchanged export a new one, and a file of one part
    hashes as it did before files had parts."""
    # the library's version too: another release may store the same export differently
    digest = hashlib.sha256(f"{_library_version()}\n".encode() + "\n".join(schema_ddl()).encode())
    for key in sorted(files):
        digest.update(f"\x00{key}\x00{_copy_options(key, spool, None)}\x00".encode())
        for number, path in enumerate(files[key]):
            with path.open("rb") as fp:
                if number:
                    fp.readline()  # the header (column names: no quoted newline)
                for block in iter(lambda: fp.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _quoted_path(path: Path) -> str:
    text = str(path)
    if '"' in text or "\\" in text or "\n" in text:
        raise ValueError(f"graph folder path cannot be used in COPY FROM: {text!r}")
    return f'"{text}"'


class LadybugGraphStore(GraphStore):
    backend = "embedded"

    def __init__(self, path: str | os.PathLike, batch_size: int = 2000, part_bytes: int | None = None):
        self.path = Path(path)
        self.batch_size = batch_size
        self.part_bytes = part_bytes  # a spooled file's part (None: what the largest pool can copy)
        self._lock = threading.RLock()
        self._db = None
        self._conn = None
        self._opened: tuple[int, int] | None = None

    # connections ------------------------------------------------------------------------------------
    def _reader(self):
        """The read-only connection to the current file, reopened when a writer has swapped in a new one;
        None when no graph has been loaded yet."""
        import ladybug

        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._close_reader()
            return None
        identity = (st.st_ino, st.st_mtime_ns)
        if self._conn is None or identity != self._opened:
            self._close_reader()
            self._db = ladybug.Database(
                str(self.path),
                read_only=True,
                buffer_pool_size=buffer_pool(st.st_size, _READ_POOL),
                max_db_size=_MAX_DB_SIZE,
            )
            self._conn = ladybug.Connection(self._db)
            self._opened = identity
        return self._conn

    def _close_reader(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._db is not None:
            self._db.close()
        self._conn = self._db = self._opened = None

    def close(self) -> None:
        with self._lock:
            self._close_reader()

    def _rows(self, query: str, params: dict | None = None) -> list[list]:
        with self._lock:
            conn = self._reader()
            if conn is None:
                return []
            return conn.execute(query, params or {}).get_all()

    def _temp_path(self) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return self.path.parent / f".{self.path.name}.{uuid.uuid4().hex}.tmp"

    def _export_digest_path(self) -> Path:
        return self.path.parent / f".{self.path.name}.export"

    def _file_identity(self) -> str:
        st = os.stat(self.path)
        return f"{st.st_ino}:{st.st_mtime_ns}:{st.st_size}"

    def loaded_export(self) -> str | None:
        """The digest of the export the current file was bulk-loaded from (None: unknown, or the file is not
        the one that load wrote — replaced or changed by a writer that kept no marker)."""
        try:
            digest, identity, library = self._export_digest_path().read_text(encoding="utf-8").split("\n")
            return digest if (identity, library) == (self._file_identity(), _library_version()) else None
        except (FileNotFoundError, ValueError):
            return None

    def _swap_in(self, temp: Path, export_digest: str | None = None) -> None:
        """Rename `temp` over the current file; `export_digest`: the export a full load made it from (any
        other write leaves the file no export's copy, so its digest is removed first)."""
        self._export_digest_path().unlink(missing_ok=True)
        os.replace(temp, self.path)
        wal = Path(str(temp) + ".wal")
        if wal.exists():
            raise RuntimeError(f"graph database {temp} was not fully checkpointed (a .wal remains)")
        if export_digest is not None:
            marker = self._temp_path()
            try:
                marker.write_text(
                    f"{export_digest}\n{self._file_identity()}\n{_library_version()}", encoding="utf-8"
                )
                os.replace(marker, self._export_digest_path())
            finally:
                marker.unlink(missing_ok=True)

    @staticmethod
    def _discard(temp: Path) -> None:
        for leftover in (temp, Path(str(temp) + ".wal"), Path(str(temp) + ".shadow")):
            if leftover.exists():
                leftover.unlink()

    # writes -----------------------------------------------------------------------------------------
    def load(self, nodes: Iterable[NodeBatch], edges: Iterable[EdgeBatch]) -> LoadReport:
        import ladybug

        started = time.perf_counter()
        tally = LoadTally()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        folder = self.path.parent / f".load-{uuid.uuid4().hex}"
        folder.mkdir()
        temp = self._temp_path()
        try:
            spool = _Spool(folder, self.part_bytes or copy_part_bytes())
            for batch in nodes:
                nt, rows = tally.nodes_of(batch)
                spool.write(
                    (nt.label,),
                    ["id", *(p.name for p in nt.props)],
                    [[r["id"], *(r[p.name] for p in nt.props)] for r in rows],
                )
            for batch in edges:
                et, rows = tally.edges_of(batch)
                key = (et.type, batch.src_label, batch.dst_label)
                spool.write(
                    key,
                    ["from", "to", *(p.name for p in et.props)],
                    [[r["src"], r["dst"], *(r[p.name] for p in et.props)] for r in rows],
                )
            files = spool.close()
            digest = _export_digest(files, spool)
            if digest == self.loaded_export():  # an unchanged export: the current file is its load
                return tally.report(
                    self.backend, str(self.path), started, unchanged=True, export_digest=digest
                )
            sizes = [path.stat().st_size for parts in files.values() for path in parts]
            db = ladybug.Database(str(temp), buffer_pool_size=load_pool(sizes), max_db_size=_MAX_DB_SIZE)
            conn = ladybug.Connection(db)
            try:
                for stmt in schema_ddl():
                    conn.execute(stmt)
                # nodes first: a rel COPY resolves its endpoints by primary key
                for key, parts in sorted(files.items(), key=lambda kv: len(kv[0])):
                    table = q(key[0])
                    options = _copy_options(key, spool, (key[1], key[2]) if len(key) == 3 else None)
                    for path in parts:  # a COPY appends to a table a part before it filled
                        conn.execute(f"COPY {table} FROM {_quoted_path(path)} {options}")
                conn.execute("CHECKPOINT")
            finally:
                conn.close()
                db.close()
            self._swap_in(temp, export_digest=digest)
        finally:
            self._discard(temp)
            shutil.rmtree(folder, ignore_errors=True)
        return tally.report(self.backend, str(self.path), started, export_digest=digest)

    def _rewrite(self, change) -> object:
        """Copy the current file, apply `change(conn)` to the copy, swap it in."""
        import ladybug

        temp = self._temp_path()
        try:
            if self.path.exists():
                shutil.copyfile(self.path, temp)
            db = ladybug.Database(
                str(temp),
                buffer_pool_size=buffer_pool(temp.stat().st_size if temp.exists() else 0, _WRITE_POOL),
                max_db_size=_MAX_DB_SIZE,
            )
            conn = ladybug.Connection(db)
            try:
                if not self.path.exists():
                    for stmt in schema_ddl():
                        conn.execute(stmt)
                result = change(conn)
                conn.execute("CHECKPOINT")
            finally:
                conn.close()
                db.close()
            self._swap_in(temp)
            return result
        finally:
            self._discard(temp)

    def upsert(self, nodes: Iterable[NodeBatch] = (), edges: Iterable[EdgeBatch] = ()) -> LoadReport:
        started = time.perf_counter()
        node_batches = [clean_node_rows(b) for b in nodes]
        edge_batches = [(b, *clean_edge_rows(b)) for b in edges]
        report = LoadReport(self.backend, str(self.path))

        def change(conn) -> None:
            for nt, rows in node_batches:
                query = _merge_nodes_query(nt)
                for i in range(0, len(rows), self.batch_size):
                    conn.execute(query, {"rows": rows[i : i + self.batch_size]})
                report.nodes[nt.label] = report.nodes.get(nt.label, 0) + len(rows)
            for batch, et, rows in edge_batches:
                query = _merge_edges_query(et, batch.src_label, batch.dst_label)
                written = 0
                for i in range(0, len(rows), self.batch_size):
                    written += conn.execute(query, {"rows": rows[i : i + self.batch_size]}).get_all()[0][0]
                report.edges[et.type] = report.edges.get(et.type, 0) + written
                if written < len(rows):
                    report.dropped_edges[et.type] = report.dropped_edges.get(et.type, 0) + len(rows) - written

        with self._lock:
            self._rewrite(change)
        report.seconds = time.perf_counter() - started
        return report

    def delete_label(self, label: str) -> int:
        nt = node_type(label)
        if not self.path.exists():
            return 0

        def change(conn) -> int:
            n = conn.execute(f"MATCH (n:{q(nt.label)}) RETURN count(n)").get_all()[0][0]
            conn.execute(f"MATCH (n:{q(nt.label)}) DETACH DELETE n")
            return n

        with self._lock:
            return self._rewrite(change)  # type: ignore[return-value]

    # reads ------------------------------------------------------------------------------------------
    def node(self, label: str, node_id: str) -> Node | None:
        nt = node_type(label)
        rows = self._rows(f"MATCH (n:{q(nt.label)}) WHERE n.id = $id RETURN n", {"id": node_id})
        return _node(rows[0][0]) if rows else None

    def neighbours(
        self,
        label: str,
        node_id: str,
        edge_types: list[str] | None = None,
        direction: str = "out",
        neighbour_labels: list[str] | None = None,
        order_by: str | None = None,
        limit: int = 50,
    ) -> list[Neighbour]:
        nt = node_type(label)
        types = edge_types_or_all(edge_types)
        check_order_by(order_by, types)
        check_limit(limit)
        labels = {node_type(x).label for x in neighbour_labels} if neighbour_labels else None
        found: list[Neighbour] = []
        order = f"e.{q(order_by)} DESC, " if order_by else "label(e), "
        for side in ("out", "in") if check_direction(direction) == "both" else (direction,):
            # one query per neighbour label: an unlabelled end makes LadybugDB project every node table
            for other, via in neighbour_groups(nt.label, types, side).items():
                if labels is not None and other not in labels:
                    continue
                rel = f"[e:{'|'.join(q(t) for t in via)}]"
                arrow = f"-{rel}->" if side == "out" else f"<-{rel}-"
                query = (
                    f"MATCH (a:{q(nt.label)} {{id: $id}}){arrow}(b:{q(other)}) "
                    f"RETURN label(e), e, b ORDER BY {order}b.id LIMIT {limit}"
                )
                for etype, edge, raw in self._rows(query, {"id": node_id}):
                    found.append(Neighbour(etype, side, read_props(edge, edge_type(etype).props), _node(raw)))
        return sort_neighbours(found, order_by, limit)

    def walk(
        self,
        label: str,
        node_id: str,
        hops: int,
        edge_types: list[str] | None = None,
        direction: str = "both",
        limit: int = 200,
    ) -> list[tuple[Node, int]]:
        nt = node_type(label)
        hops, limit = check_hops(hops), check_limit(limit)
        types = "|".join(q(t) for t in edge_types_or_all(edge_types)) if edge_types else ""
        pattern = f"[e{':' + types if types else ''}* SHORTEST 1..{hops}]"
        arrow = {"out": f"-{pattern}->", "in": f"<-{pattern}-", "both": f"-{pattern}-"}[
            check_direction(direction)
        ]
        # ids first (cheap), properties after, per label; one extra row: the start can come back undirected
        query = (
            f"MATCH (a:{q(nt.label)} {{id: $id}}){arrow}(b) "
            f"RETURN label(b), b.id, length(e) AS d ORDER BY d, label(b), b.id LIMIT {limit + 1}"
        )
        hits = [
            (lab, nid, int(d))
            for lab, nid, d in self._rows(query, {"id": node_id})
            if (lab, nid) != (nt.label, node_id)
        ]
        hits = hits[:limit]
        nodes = self._nodes_by_id(hits)
        return [(nodes[(lab, nid)], d) for lab, nid, d in hits if (lab, nid) in nodes]

    def _nodes_by_id(self, keys: Iterable[tuple]) -> dict[tuple[str, str], Node]:
        by_label: dict[str, list[str]] = {}
        for lab, nid, *_ in keys:
            by_label.setdefault(lab, []).append(nid)
        out = {}
        for lab, ids in by_label.items():
            for (raw,) in self._rows(f"UNWIND $ids AS x MATCH (n:{q(lab)} {{id: x}}) RETURN n", {"ids": ids}):
                n = _node(raw)
                out[(n.label, n.id)] = n
        return out

    def counts(self) -> GraphCounts:
        nodes = {label: 0 for label in NODE_TYPES}
        edges = {t: 0 for t in EDGE_TYPES}
        with self._lock:
            if self._reader() is None:
                return GraphCounts(nodes, edges)
            for label in NODE_TYPES:
                nodes[label] = self._rows(f"MATCH (n:{q(label)}) RETURN count(n)")[0][0]
            for t in EDGE_TYPES:
                edges[t] = self._rows(f"MATCH ()-[e:{q(t)}]->() RETURN count(e)")[0][0]
        return GraphCounts(nodes, edges)

    def iter_edges(self, edge_type_name: str) -> Iterator[tuple[str, str, str, str, dict]]:
        """Every edge of the type, one (source label, target label) pair of its schema at a time, its
        properties as columns, in slices of the source nodes' offsets (the order within a read is the
        engine's: it runs on several threads). A pattern with unlabelled ends scans every node table, and returning the whole edge
        struct holds more; and the engine holds a query's whole result in the reader's buffer pool: at 1M
        messages NEXT (960k edges) and at 300k EVIDENCE_FOR (808k edges with their span texts, more than
        the 373 MB file) did not fit, a slice of about `_EDGE_SLICE` edges does."""
        et = edge_type(edge_type_name)
        names = [p.name for p in et.props]
        columns = "".join(f", e.{q(n)}" for n in names)
        with self._lock:
            conn = self._reader()
            if conn is None:
                return
            for src_label, dst_label in et.endpoints:
                pattern = f"MATCH (a:{q(src_label)})-[e:{q(et.type)}]->(b:{q(dst_label)})"
                edges, last = conn.execute(f"{pattern} RETURN count(e), max(offset(id(a)))").get_next()
                if not edges:
                    continue
                step = max(1, -(-(last + 1) * _EDGE_SLICE // edges))  # source offsets per slice
                for lo in range(0, last + 1, step):
                    result = conn.execute(
                        f"{pattern} WHERE offset(id(a)) >= $lo AND offset(id(a)) < $hi RETURN a.id, b.id{columns}",
                        {"lo": lo, "hi": lo + step},
                    )
                    while result.has_next():
                        src, dst, *values = result.get_next()
                        yield (
                            src_label,
                            src,
                            dst_label,
                            dst,
                            read_props(dict(zip(names, values, strict=True)), et.props),
                        )

    def fact_states(
        self,
        concept_id: str,
        valid_at: datetime | None = None,
        recorded_as_of: datetime | None = None,
        attribute: str | None = None,
    ) -> list[Neighbour]:
        where, params = fact_state_where(valid_at, recorded_as_of, attribute, "e", "f")
        query = (
            f"MATCH (c:Concept {{id: $id}})-[e:HAS_STATE]->(f:FactState) WHERE {where} "
            "RETURN e, f ORDER BY e.valid_from, f.id"
        )
        props = EDGE_TYPES["HAS_STATE"].props
        return [
            Neighbour("HAS_STATE", "out", read_props(e, props), _node(f))
            for e, f in self._rows(query, {"id": concept_id, **params})
        ]


def _node(raw: dict) -> Node:
    nt = NODE_TYPES[raw["_LABEL"]]
    return Node(nt.label, raw["id"], read_props(raw, nt.props))


def _param(p: Prop) -> str:
    # a list-of-maps parameter is typed from its values: a column that is all None arrives as STRING
    return f"r.{q(p.name)}" if p.type == "STRING" else f"CAST(r.{q(p.name)} AS {_TYPES[p.type]})"


def _merge_nodes_query(nt: NodeType) -> str:
    sets = ", ".join(f"n.{q(p.name)} = {_param(p)}" for p in nt.props)
    return f"UNWIND $rows AS r MERGE (n:{q(nt.label)} {{id: r.id}}) SET {sets}"


def _merge_edges_query(et: EdgeType, src: str, dst: str) -> str:
    key = f" {{{q(et.key)}: r.{q(et.key)}}}" if et.key else ""
    sets = ", ".join(f"e.{q(p.name)} = {_param(p)}" for p in et.props if p.name != et.key)
    return (
        f"UNWIND $rows AS r MATCH (a:{q(src)} {{id: r.src}}), (b:{q(dst)} {{id: r.dst}}) "
        f"MERGE (a)-[e:{q(et.type)}{key}]->(b)" + (f" SET {sets}" if sets else "") + " RETURN count(e)"
    )

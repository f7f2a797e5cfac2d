"""Neo4j graph store over the official driver (Bolt).

Every node carries its `corpus`, so one server holds many corpora; a composite uniqueness constraint on
(corpus, id) per label backs every lookup. Writes are batched, parameterised `UNWIND $rows AS r MERGE …`
statements: labels, edge types and property names come from the schema whitelist, every value is a
parameter. A full `load` stamps what it wrote with a load id and then prunes what it did not write, so a
rerun leaves identical counts. Unlike the embedded store, readers can see a load in progress batch by
batch (each batch is its own transaction); isolating whole loads needs a database per load (Enterprise).
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from datetime import datetime
from urllib.parse import urlsplit

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
    chunks,
    clean_edge_rows,
    clean_node_rows,
    fact_state_where,
    sort_neighbours,
    types_touching,
)
from memory_core.graph.schema import (
    EDGE_TYPES,
    NODE_TYPES,
    EdgeType,
    NodeType,
    edge_type,
    edge_types_or_all,
    ident,
    node_type,
    q,
    read_props,
)

_HIDDEN = ("corpus", "_load")  # bookkeeping properties, never returned


def redacted_uri(uri: str) -> str:
    """The URI without any user:password@ part (for reports and metadata)."""
    parts = urlsplit(uri)
    host = parts.hostname or ""
    return parts._replace(netloc=f"{host}:{parts.port}" if parts.port else host).geturl()


def _native(value: object) -> object:
    to_native = getattr(value, "to_native", None)  # neo4j.time.DateTime -> datetime.datetime
    return to_native() if callable(to_native) else value


def _props(raw: dict) -> dict:
    return {k: _native(v) for k, v in raw.items() if k not in _HIDDEN}


class Neo4jGraphStore(GraphStore):
    backend = "neo4j"

    def __init__(
        self, uri: str, user: str, password: str, corpus: str, database: str = "neo4j", batch_size: int = 5000
    ):
        self.uri = uri
        self.database = database
        self.corpus = corpus
        self.batch_size = batch_size
        self._auth = (user, password)
        self._driver = None
        self._schema_ready = False
        self.location = f"{redacted_uri(uri)} db={database} corpus={corpus}"

    # connection -------------------------------------------------------------------------------------
    def _get_driver(self):
        if self._driver is None:
            from neo4j import GraphDatabase

            self._driver = GraphDatabase.driver(self.uri, auth=self._auth)
        return self._driver

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def _write(self, query: str, **params) -> list[dict]:
        def work(tx):
            return [r.data() for r in tx.run(query, {"corpus": self.corpus, **params})]

        with self._get_driver().session(database=self.database) as session:
            return session.execute_write(work)

    def _read(self, query: str, **params) -> list[dict]:
        def work(tx):
            return [r.data() for r in tx.run(query, {"corpus": self.corpus, **params})]

        with self._get_driver().session(database=self.database) as session:
            return session.execute_read(work)

    def ensure_schema(self) -> None:
        """Uniqueness of (corpus, id) per label (its index serves every lookup) and an index on corpus."""
        if self._schema_ready:
            return
        with self._get_driver().session(database=self.database) as session:
            for label in NODE_TYPES:
                lab = q(label)
                name = ident(label).lower()
                session.run(
                    f"CREATE CONSTRAINT {name}_corpus_id IF NOT EXISTS "
                    f"FOR (n:{lab}) REQUIRE (n.corpus, n.id) IS UNIQUE"
                ).consume()
                session.run(f"CREATE INDEX {name}_corpus IF NOT EXISTS FOR (n:{lab}) ON (n.corpus)").consume()
            session.run(
                "CREATE INDEX evidence_for_mention IF NOT EXISTS FOR ()-[e:EVIDENCE_FOR]-() ON (e.mention_id)"
            ).consume()
        self._schema_ready = True

    # writes -----------------------------------------------------------------------------------------
    def _merge_nodes(self, nt: NodeType, rows: list[dict], load_id: str | None) -> None:
        query = (
            f"UNWIND $rows AS r MERGE (n:{q(nt.label)} {{corpus: $corpus, id: r.id}}) "
            "SET n += r.props" + (", n._load = $load" if load_id else "")
        )
        for part in chunks(rows, self.batch_size):
            payload = [{"id": r["id"], "props": {k: v for k, v in r.items() if k != "id"}} for r in part]
            self._write(query, rows=payload, load=load_id)

    def _merge_edges(self, et: EdgeType, src: str, dst: str, rows: list[dict], load_id: str | None) -> int:
        key = f" {{{q(et.key)}: r.key}}" if et.key else ""
        query = (
            f"UNWIND $rows AS r MATCH (a:{q(src)} {{corpus: $corpus, id: r.src}}) "
            f"MATCH (b:{q(dst)} {{corpus: $corpus, id: r.dst}}) "
            f"MERGE (a)-[e:{q(et.type)}{key}]->(b) SET e += r.props"
            + (", e._load = $load" if load_id else "")
            + " RETURN count(e) AS written"
        )
        written = 0
        for part in chunks(rows, self.batch_size):
            payload = [
                {
                    "src": r["src"],
                    "dst": r["dst"],
                    "key": r.get(et.key) if et.key else None,
                    "props": {k: v for k, v in r.items() if k not in ("src", "dst")},
                }
                for r in part
            ]
            written += self._write(query, rows=payload, load=load_id)[0]["written"]
        return written

    def load(self, nodes: Iterable[NodeBatch], edges: Iterable[EdgeBatch]) -> LoadReport:
        started = time.perf_counter()
        self.ensure_schema()
        load_id = uuid.uuid4().hex
        tally = LoadTally()
        for batch in nodes:
            nt, rows = tally.nodes_of(batch)
            self._merge_nodes(nt, rows, load_id)
        for batch in edges:
            et, rows = tally.edges_of(batch)
            written = self._merge_edges(et, batch.src_label, batch.dst_label, rows, load_id)
            # the tally saw both endpoints of every row loaded: a shortfall is a server-side surprise
            if written != len(rows):
                raise RuntimeError(
                    f"{et.type}: wrote {written} of {len(rows)} edges whose endpoints were loaded"
                )
        self._prune(load_id)
        return tally.report(self.backend, self.location, started)

    def _prune(self, load_id: str) -> None:
        """Delete what the previous loads wrote and this one did not (edges first, then nodes)."""
        for et in EDGE_TYPES.values():
            for src, dst in et.endpoints:
                query = (
                    f"MATCH (:{q(src)} {{corpus: $corpus}})-[e:{q(et.type)}]->(:{q(dst)}) "
                    "WHERE e._load IS NULL OR e._load <> $load WITH e LIMIT $batch DELETE e RETURN count(*) AS deleted"
                )
                while self._write(query, load=load_id, batch=self.batch_size)[0]["deleted"]:
                    pass
        for label in NODE_TYPES:
            query = (
                f"MATCH (n:{q(label)} {{corpus: $corpus}}) WHERE n._load IS NULL OR n._load <> $load "
                "WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS deleted"
            )
            while self._write(query, load=load_id, batch=self.batch_size)[0]["deleted"]:
                pass

    def upsert(self, nodes: Iterable[NodeBatch] = (), edges: Iterable[EdgeBatch] = ()) -> LoadReport:
        # upserted items carry no load id: the next full load replaces them unless it exports them too
        started = time.perf_counter()
        self.ensure_schema()
        report = LoadReport(self.backend, self.location)
        for batch in nodes:
            nt, rows = clean_node_rows(batch)
            self._merge_nodes(nt, rows, None)
            report.nodes[nt.label] = report.nodes.get(nt.label, 0) + len(rows)
        for batch in edges:
            et, rows = clean_edge_rows(batch)
            written = self._merge_edges(et, batch.src_label, batch.dst_label, rows, None)
            report.edges[et.type] = report.edges.get(et.type, 0) + written
            if written < len(rows):
                report.dropped_edges[et.type] = report.dropped_edges.get(et.type, 0) + len(rows) - written
        report.seconds = time.perf_counter() - started
        return report

    def delete_label(self, label: str) -> int:
        nt = node_type(label)
        query = f"MATCH (n:{q(nt.label)} {{corpus: $corpus}}) WITH n LIMIT $batch DETACH DELETE n RETURN count(*) AS deleted"
        total = 0
        while n := self._write(query, batch=self.batch_size)[0]["deleted"]:
            total += n
        return total

    # reads ------------------------------------------------------------------------------------------
    def node(self, label: str, node_id: str) -> Node | None:
        nt = node_type(label)
        rows = self._read(
            f"MATCH (n:{q(nt.label)} {{corpus: $corpus, id: $id}}) RETURN properties(n) AS p", id=node_id
        )
        return Node(nt.label, node_id, read_props(_props(rows[0]["p"]), nt.props)) if rows else None

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
        labels = [node_type(x).label for x in neighbour_labels] if neighbour_labels else list(NODE_TYPES)
        found: list[Neighbour] = []
        for side in ("out", "in") if check_direction(direction) == "both" else (direction,):
            usable = types_touching(nt.label, types, "src" if side == "out" else "dst")
            if not usable:
                continue
            rel = f"[e:{'|'.join(q(t) for t in usable)}]"
            arrow = f"-{rel}->" if side == "out" else f"<-{rel}-"
            order = f"e.{q(order_by)} DESC, " if order_by else "t, "  # after RETURN, e is the property map
            query = (
                f"MATCH (a:{q(nt.label)} {{corpus: $corpus, id: $id}}){arrow}(b) WHERE labels(b)[0] IN $labels "
                f"RETURN type(e) AS t, properties(e) AS e, labels(b)[0] AS l, properties(b) AS b "
                f"ORDER BY {order}l, b.id LIMIT $limit"
            )
            for row in self._read(query, id=node_id, labels=labels, limit=limit):
                other = NODE_TYPES[row["l"]]
                b = _props(row["b"])
                found.append(
                    Neighbour(
                        row["t"],
                        side,
                        read_props(_props(row["e"]), edge_type(row["t"]).props),
                        Node(other.label, b["id"], read_props(b, other.props)),
                    )
                )
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
        """Breadth first, one batched query per hop and frontier label (a variable-length match would
        enumerate every path, exponential around hubs)."""
        nt = node_type(label)
        hops, limit = check_hops(hops), check_limit(limit)
        rel = "[e:" + "|".join(q(t) for t in edge_types_or_all(edge_types)) + "]" if edge_types else "[e]"
        arrow = {"out": f"-{rel}->", "in": f"<-{rel}-", "both": f"-{rel}-"}[check_direction(direction)]
        seen = {(nt.label, node_id)}
        frontier = [(nt.label, node_id)]
        found: list[tuple[str, str, int]] = []
        for dist in range(1, hops + 1):
            remaining = limit - len(found)
            if not frontier or remaining <= 0:
                break
            by_label: dict[str, list[str]] = defaultdict(list)
            for lab, nid in frontier:
                by_label[lab].append(nid)
            level: set[tuple[str, str]] = set()
            for lab, ids in by_label.items():
                query = (
                    f"UNWIND $ids AS x MATCH (a:{q(lab)} {{corpus: $corpus, id: x}}){arrow}(b) "
                    "RETURN DISTINCT labels(b)[0] AS l, b.id AS id ORDER BY l, id LIMIT $cap"
                )
                for row in self._read(query, ids=ids, cap=remaining + len(seen)):
                    level.add((row["l"], row["id"]))
            new = sorted(level - seen)[:remaining]
            seen.update(new)
            found.extend((lab, nid, dist) for lab, nid in new)
            frontier = new
        nodes = self._nodes_by_key([(lab, nid) for lab, nid, _ in found])
        return [(nodes[(lab, nid)], dist) for lab, nid, dist in found if (lab, nid) in nodes]

    def _nodes_by_key(self, keys: list[tuple[str, str]]) -> dict[tuple[str, str], Node]:
        by_label: dict[str, list[str]] = defaultdict(list)
        for lab, nid in keys:
            by_label[lab].append(nid)
        out = {}
        for lab, ids in by_label.items():
            nt = NODE_TYPES[lab]
            query = (
                f"UNWIND $ids AS x MATCH (n:{q(lab)} {{corpus: $corpus, id: x}}) RETURN properties(n) AS p"
            )
            for row in self._read(query, ids=ids):
                p = _props(row["p"])
                out[(lab, p["id"])] = Node(lab, p["id"], read_props(p, nt.props))
        return out

    def counts(self) -> GraphCounts:
        nodes = {}
        for label in NODE_TYPES:
            query = f"MATCH (n:{q(label)} {{corpus: $corpus}}) RETURN count(n) AS total"
            nodes[label] = self._read(query)[0]["total"]
        edges = {}
        for et in EDGE_TYPES.values():
            edges[et.type] = 0
            for src, dst in et.endpoints:
                query = f"MATCH (:{q(src)} {{corpus: $corpus}})-[e:{q(et.type)}]->(:{q(dst)}) RETURN count(e) AS total"
                edges[et.type] += self._read(query)[0]["total"]
        return GraphCounts(nodes, edges)

    def iter_edges(self, edge_type_name: str) -> Iterator[tuple[str, str, str, str, dict]]:
        et = edge_type(edge_type_name)
        with self._get_driver().session(database=self.database) as session:
            for src, dst in et.endpoints:
                result = session.run(
                    f"MATCH (a:{q(src)} {{corpus: $corpus}})-[e:{q(et.type)}]->(b:{q(dst)}) "
                    "RETURN a.id AS a, b.id AS b, properties(e) AS e",
                    {"corpus": self.corpus},
                )
                for row in result:
                    yield src, row["a"], dst, row["b"], read_props(_props(row["e"]), et.props)

    def fact_states(
        self,
        concept_id: str,
        valid_at: datetime | None = None,
        recorded_as_of: datetime | None = None,
        attribute: str | None = None,
    ) -> list[Neighbour]:
        where, params = fact_state_where(valid_at, recorded_as_of, attribute, "e", "f")
        query = (
            f"MATCH (c:Concept {{corpus: $corpus, id: $id}})-[e:HAS_STATE]->(f:FactState) WHERE {where} "
            "RETURN properties(e) AS e, properties(f) AS f ORDER BY e.valid_from, f.id"
        )
        out = []
        for row in self._read(query, id=concept_id, **params):
            f = _props(row["f"])
            out.append(
                Neighbour(
                    "HAS_STATE",
                    "out",
                    read_props(_props(row["e"]), EDGE_TYPES["HAS_STATE"].props),
                    Node("FactState", f["id"], read_props(f, NODE_TYPES["FactState"].props)),
                )
            )
        return out

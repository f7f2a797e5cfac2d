"""Graph load benchmark: the embedded store's bulk `COPY FROM` load against naive per-row writes, measured
in the same run on the same generated corpus.

A corpus of N messages (conversations of 20 turns) is ingested and cut into segments by the pipeline's own
code; concepts, mentions, evidence, topics, links, domains, anchors and fact states are generated over it
with the shapes the later stages write. Then:

- `copy`      LadybugGraphStore.load: export (SQL, streamed) → CSV spool → COPY FROM → atomic swap
- `merge`     the same nodes/edges through LadybugGraphStore.upsert (batched UNWIND … MERGE, 2000 rows)
- `per_row`   one parameterised CREATE statement per node and per edge

The baselines run on a smaller corpus (their cost grows with the graph); `copy` runs on both sizes, so the
ratio is taken on the same small corpus, and the large figure shows how COPY scales.

    python -m evals.benchmarks.bench_graph_load [--messages 100000] [--baseline-messages 2000]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import insert, select

from memory_core.graph import GraphExport, embedded_graph_path, expected_counts, load_corpus_graph
from memory_core.graph.base import EdgeBatch
from memory_core.graph.ladybug_store import LadybugGraphStore, schema_ddl
from memory_core.graph.schema import EDGE_TYPES, NODE_TYPES, q
from memory_core.ids import stable_uuid
from memory_core.ingest.loader import ingest_file
from memory_core.ontology.concepts import CONCEPT_TYPES, RELATION_TYPES
from memory_core.segments import build_segments
from memory_core.store.db import CorpusStore, MemoryHome, dispose_engines
from memory_core.store.schema import (
    anchor_entities,
    canonical_concepts,
    concept_evidence,
    domains,
    fact_states,
    mentions,
    messages,
    segments,
    topic_concept_links,
    topic_segments,
    topics,
)

WORDS = "garden tomato balcony kyoto ryokan budget project deadline python graph memory sleep running coffee".split()
T0 = datetime(2024, 1, 1)


def write_jsonl(path: Path, n_messages: int, seed: int = 0) -> Path:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fp:
        for i in range(n_messages):
            conv = i // 20
            role = "user" if i % 2 == 0 else "assistant"
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 40)))
            row = {
                "id": f"m{i}",
                "conversation_id": f"c{conv}",
                "role": role,
                "author": role,
                "text": text.capitalize() + ".",
                "created_at": (T0 + timedelta(minutes=i)).isoformat(),
                "title": f"conversation {conv}",
            }
            fp.write(json.dumps(row) + "\n")
    return path


def _insert(engine, table, rows: list[dict], chunk: int = 5000) -> None:
    with engine.begin() as conn:
        for i in range(0, len(rows), chunk):
            conn.execute(insert(table), rows[i : i + chunk])


def generate_staging(store: CorpusStore, seed: int = 0) -> None:
    """Concepts, mentions with verbatim spans, evidence, topics, links, domains, anchors, fact states."""
    rng = random.Random(seed)
    with store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    with store.staging.connect() as conn:
        segs = conn.execute(
            select(segments.c.segment_id, segments.c.conversation_id, segments.c.message_ids).where(
                segments.c.superseded_at.is_(None)
            )
        ).all()
    n_concepts = max(50, len(texts) // 25)
    concept_ids = [stable_uuid("bench-concept", i) for i in range(n_concepts)]
    n_topics = max(5, n_concepts // 10)
    topic_ids = [stable_uuid("bench-topic", i) for i in range(n_topics)]
    domain_ids = [stable_uuid("bench-domain", i) for i in range(max(2, n_topics // 20))]
    anchor_ids = [stable_uuid("bench-anchor", i) for i in range(max(1, n_topics // 5))]
    now = T0 + timedelta(days=365)
    mention_rows, evidence_rows = [], []
    for seg in segs:
        for k in range(rng.randint(1, 2)):
            mid = seg.message_ids[0]
            word = texts[mid].split(" ")[0]
            cid = rng.choice(concept_ids)
            mention_id = stable_uuid("bench-mention", seg.segment_id, k)
            common = dict(
                segment_id=seg.segment_id, message_id=mid, span_start=0, span_end=len(word), confidence=0.8
            )
            mention_rows.append(
                dict(
                    mention_id=mention_id,
                    conversation_id=seg.conversation_id,
                    surface=word,
                    title=word,
                    type="entity",
                    description="",
                    aliases=[],
                    relations=[],
                    consolidated_id=cid,
                    extractor="bench",
                    extracted_at=now,
                    message_created_at=T0,
                    **common,
                )
            )
            evidence_rows.append(
                dict(concept_id=cid, mention_id=mention_id, text=word, status="active", **common)
            )
    concept_rows = []
    for i, cid in enumerate(concept_ids):
        rel = [
            {"target_id": rng.choice(concept_ids), "relation": rng.choice(RELATION_TYPES), "confidence": 0.7}
            for _ in range(1 if rng.random() < 0.3 else 0)
        ]
        concept_rows.append(
            dict(
                concept_id=cid,
                title=f"concept {i}",
                type=rng.choice(CONCEPT_TYPES),
                description=f"generated concept {i}",
                state="active",
                trust="stable",
                confidence=0.7,
                aliases=[],
                evidence_spans=[],
                relations=rel,
                revision_count=0,
                support_count=1,
                first_seen=T0,
                last_seen=now,
                recorded_at=now,
                merged_into=None,
            )
        )
    _insert(store.staging, canonical_concepts, concept_rows)
    _insert(store.staging, mentions, mention_rows)
    _insert(store.staging, concept_evidence, evidence_rows)
    _insert(
        store.staging,
        domains,
        [dict(domain_id=d, label=d[:8], profile="", size=1, recorded_at=now) for d in domain_ids],
    )
    _insert(
        store.staging,
        anchor_entities,
        [
            dict(
                anchor_id=a,
                domain_id=rng.choice(domain_ids),
                concept_id=None,
                label=a[:8],
                score=0.5,
                recorded_at=now,
            )
            for a in anchor_ids
        ],
    )
    _insert(
        store.staging,
        topics,
        [
            dict(
                topic_id=t,
                label=f"topic {i}",
                profile="",
                keywords=[],
                centroid=[],
                size=0,
                silhouette=None,
                label_centroid_distance=None,
                domain_id=rng.choice(domain_ids),
                anchor_id=rng.choice(anchor_ids) if i % 3 else None,
                first_seen=T0,
                last_seen=now,
                recorded_at=now,
            )
            for i, t in enumerate(topic_ids)
        ],
    )
    _insert(
        store.staging,
        topic_segments,
        [
            dict(segment_id=s.segment_id, topic_id=topic_ids[i % n_topics], probability=0.9)
            for i, s in enumerate(segs)
        ],
    )
    _insert(
        store.staging,
        topic_concept_links,
        [
            dict(topic_id=t, concept_id=c, weight=rng.uniform(20, 100), cosine=0.5)
            for t in topic_ids
            for c in rng.sample(concept_ids, 10)
        ],
    )
    states = []
    for cid in concept_ids[: n_concepts // 10]:
        mid = rng.choice(list(texts))
        states.append(
            dict(
                fact_state_id=stable_uuid("bench-fact", cid, 0),
                concept_id=cid,
                attribute="status",
                value="planned",
                valid_from=T0,
                valid_until=T0 + timedelta(days=30),
                recorded_at=now,
                superseded_at=None,
                evidence_message_id=mid,
            )
        )
        states.append(dict(fact_state_id=stable_uuid("bench-fact", cid, 1), concept_id=cid, attribute="status", value="done", valid_from=T0 + timedelta(days=30), valid_until=None, recorded_at=now, superseded_at=None, evidence_message_id=mid))  # fmt: skip
    _insert(store.staging, fact_states, states)


def build_corpus(home: MemoryHome, tmp: Path, name: str, n_messages: int) -> tuple[CorpusStore, dict]:
    store = home.corpus(name)
    timings = {}
    t0 = time.perf_counter()
    ingest_file(store, write_jsonl(tmp / f"{name}.jsonl", n_messages), "jsonl")
    timings["ingest_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    build_segments(store)
    timings["segments_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    generate_staging(store)
    timings["staging_s"] = time.perf_counter() - t0
    return store, timings


def per_row_load(store: CorpusStore, path: Path) -> tuple[int, float]:
    """One parameterised CREATE per node, then one MATCH … CREATE per edge, into a fresh database."""
    import ladybug

    from memory_core.graph.base import clean_edge_rows, clean_node_rows

    db = ladybug.Database(str(path))
    conn = ladybug.Connection(db)
    for stmt in schema_ddl():
        conn.execute(stmt)
    export = GraphExport(store)
    items = 0
    started = time.perf_counter()
    for batch in export.nodes():
        nt, rows = clean_node_rows(batch)
        props = ", ".join(f"{q(p.name)}: $p_{p.name}" for p in nt.props)
        query = f"CREATE (:{q(nt.label)} {{id: $id, {props}}})"
        for row in rows:
            conn.execute(query, {"id": row["id"], **{f"p_{p.name}": row[p.name] for p in nt.props}})
            items += 1
    for batch in export.edges():
        et, rows = clean_edge_rows(batch)
        props = ", ".join(f"{q(p.name)}: $p_{p.name}" for p in et.props)
        query = f"MATCH (a:{q(batch.src_label)} {{id: $src}}), (b:{q(batch.dst_label)} {{id: $dst}}) CREATE (a)-[:{q(et.type)}{' {' + props + '}' if props else ''}]->(b)"
        for row in rows:
            conn.execute(
                query,
                {"src": row["src"], "dst": row["dst"], **{f"p_{p.name}": row[p.name] for p in et.props}},
            )
            items += 1
    seconds = time.perf_counter() - started
    conn.close()
    db.close()
    return items, seconds


def merge_load(store: CorpusStore, path: Path) -> tuple[int, float]:
    graph = LadybugGraphStore(path)
    export = GraphExport(store)
    nodes = list(export.nodes())
    edges = list(export.edges())
    started = time.perf_counter()
    report = graph.upsert(nodes, edges)
    seconds = time.perf_counter() - started
    graph.close()
    return sum(report.nodes.values()) + sum(report.edges.values()), seconds


def merge_into_large(store: CorpusStore, tmp: Path, n_edges: int = 500) -> tuple[int, float]:
    """Batched UNWIND … MERGE of `n_edges` NEXT edges into a copy of the loaded large graph: what a
    row-wise (non-COPY) load pays per edge once the tables are big."""
    import shutil

    import ladybug

    from memory_core.graph.base import clean_edge_rows
    from memory_core.graph.ladybug_store import _merge_edges_query

    rows = []
    for batch in GraphExport(store).edges():
        if batch.type == "NEXT":
            rows.extend(batch.rows)
        if len(rows) >= n_edges:
            break
    batch = EdgeBatch("NEXT", "Message", "Message", rows[:n_edges])
    et, clean = clean_edge_rows(batch)
    copy = tmp / "merge-large.lbdb"
    shutil.copyfile(embedded_graph_path(store), copy)
    db = ladybug.Database(str(copy))
    conn = ladybug.Connection(db)
    started = time.perf_counter()
    conn.execute(_merge_edges_query(et, "Message", "Message"), {"rows": clean})
    seconds = time.perf_counter() - started
    conn.close()
    db.close()
    return len(clean), seconds


def traversal_latency(store: CorpusStore, probes: int = 200) -> dict[str, float]:
    """Median milliseconds of the read side's graph calls on the loaded graph (random start nodes)."""
    import statistics

    rng = random.Random(1)
    with store.source.connect() as conn:
        message_ids = list(conn.execute(select(messages.c.message_id)).scalars())
    with store.staging.connect() as conn:
        concept_ids = list(conn.execute(select(canonical_concepts.c.concept_id)).scalars())
        topic_ids = list(conn.execute(select(topics.c.topic_id)).scalars())
    graph = LadybugGraphStore(embedded_graph_path(store))
    calls = {
        "node(Message)": lambda: graph.node("Message", rng.choice(message_ids)),
        "find_node(id only)": lambda: graph.find_node(rng.choice(concept_ids)),
        "neighbours(Concept, both)": lambda: graph.neighbours(
            "Concept", rng.choice(concept_ids), direction="both"
        ),
        "children(Topic) by weight": lambda: graph.children("Topic", rng.choice(topic_ids)),
        "chronology(Message, 2, 2)": lambda: graph.chronology(rng.choice(message_ids), 2, 2),
        "walk(Concept, 2 hops, 200)": lambda: graph.walk("Concept", rng.choice(concept_ids), 2),
        "lineage(Message)": lambda: graph.lineage("Message", rng.choice(message_ids)),
    }
    out = {}
    calls["node(Message)"]()  # open the database once
    for name, call in calls.items():
        times = []
        for _ in range(probes):
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
        out[name] = statistics.median(times) * 1000
    graph.close()
    return out


def copy_load(store: CorpusStore) -> tuple[int, float, dict]:
    graph = LadybugGraphStore(embedded_graph_path(store))
    report, _ = load_corpus_graph(store, graph)
    counts = graph.counts()
    graph.close()
    assert counts.nodes == expected_counts(store)["nodes"] and counts.edges == expected_counts(store)["edges"]
    return (
        counts.total_nodes + counts.total_edges,
        report.seconds,
        {"nodes": counts.total_nodes, "edges": counts.total_edges},
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--baseline-messages", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=3, help="COPY loads per size (median reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-graph-") as tmp_name:
        tmp = Path(tmp_name)
        home = MemoryHome.resolve(tmp / "home")
        rows = []
        small, small_t = build_corpus(home, tmp, "small", args.baseline_messages)
        copy_small = [copy_load(small) for _ in range(args.repeats)]
        copy_small.sort(key=lambda r: r[1])
        items, secs, sizes = copy_small[len(copy_small) // 2]
        rows.append(("copy", args.baseline_messages, sizes, items, secs))
        m_items, m_secs = merge_load(small, tmp / "merge.lbdb")
        rows.append(("merge (UNWIND, 2000/batch)", args.baseline_messages, sizes, m_items, m_secs))
        p_items, p_secs = per_row_load(small, tmp / "per_row.lbdb")
        rows.append(("per_row", args.baseline_messages, sizes, p_items, p_secs))
        print(f"small corpus built in {small_t}")
        big, big_t = build_corpus(home, tmp, "big", args.messages)
        print(f"large corpus built in { {k: round(v, 1) for k, v in big_t.items()} }")
        copy_big = [copy_load(big) for _ in range(args.repeats)]
        copy_big.sort(key=lambda r: r[1])
        items, secs, sizes = copy_big[len(copy_big) // 2]
        rows.append(("copy", args.messages, sizes, items, secs))
        assert len({(r[0], r[2]["nodes"], r[2]["edges"]) for r in copy_big}) == 1, (
            "reloads changed the counts"
        )
        latency = traversal_latency(big)
        mi_items, mi_secs = merge_into_large(big, tmp)
        rows.append(("merge 500 NEXT edges into the large graph", args.messages, sizes, mi_items, mi_secs))
        dispose_engines()
    rate = {(r[0], r[1]): r[3] / r[4] for r in rows}
    print("\n| method | messages | nodes | edges | seconds | items/s | vs per_row (same corpus) |")
    print("|---|---|---|---|---|---|---|")
    for method, n, sizes, items, secs in rows:
        base = rate.get(("per_row", n))
        ratio = f"{(items / secs) / base:.0f}×" if base else "—"
        print(
            f"| {method} | {n} | {sizes['nodes']} | {sizes['edges']} | {secs:.2f} | {items / secs:,.0f} | {ratio} |"
        )
    print(f"\ntraversal on the {args.messages}-message graph, median ms over 200 random starts:")
    for name, ms in latency.items():
        print(f"  {name:28s} {ms:8.3f}")
    print(
        f"\n{len(NODE_TYPES)} node labels, {len(EDGE_TYPES)} edge types; COPY seconds include the SQL export and CSV spool."
    )


if __name__ == "__main__":
    main()

"""Ingestion speed (parse + store): messages per second, median of repeated runs, against a baseline
measured in the same run — `json.load` of the whole file plus a bare sqlite3 `executemany` of the same
message texts (no validation, no provenance, no accounting).

    python -m evals.benchmarks.bench_ingest [--messages 100000] [--repeat 3] [--locomo ../shared/data/locomo/locomo_dev.json]
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import tempfile
import uuid
from pathlib import Path

from evals.benchmarks.common import peak_rss_mib, print_table, timed_cpu
from evals.datasets import shared_data_dir
from memory_core.ingest.loader import ingest_file
from memory_core.store.db import MemoryHome, dispose_engines

WORDS = (
    "project deploy database schema kestrel lisbon marathon knee training plan budget flight hotel python "
    "dashboard model forecast station dock queue latency review friend dinner recipe garden weekend report"
).split()


def generate_chatgpt_export(path: Path, n_messages: int, per_conversation: int = 20, seed: int = 7) -> None:
    """A ChatGPT-shaped export: a hidden system root per conversation, alternating turns, one edited branch in ten."""
    rng = random.Random(seed)
    t = 1_700_000_000.0
    with path.open("w", encoding="utf-8") as fp:
        fp.write("[")
        made = 0
        first = True
        while made < n_messages:
            cid = str(uuid.UUID(int=rng.getrandbits(128)))
            root, system = f"{cid}-root", f"{cid}-sys"
            mapping = {
                root: {"id": root, "message": None, "parent": None, "children": [system]},
                system: {
                    "id": system,
                    "parent": root,
                    "children": [],
                    "message": {
                        "id": system,
                        "author": {"role": "system"},
                        "create_time": None,
                        "content": {"content_type": "text", "parts": [""]},
                        "metadata": {"is_visually_hidden_from_conversation": True},
                    },
                },
            }
            parent = system
            count = min(per_conversation, n_messages - made)
            for i in range(count):
                nid = str(uuid.UUID(int=rng.getrandbits(128)))
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 120)))
                mapping[nid] = {
                    "id": nid,
                    "parent": parent,
                    "children": [],
                    "message": {
                        "id": nid,
                        "author": {"role": "user" if i % 2 == 0 else "assistant"},
                        "create_time": t,
                        "content": {"content_type": "text", "parts": [text]},
                        "metadata": {},
                        "recipient": "all",
                    },
                }
                mapping[parent]["children"].append(nid)
                parent = nid
                t += 30
            made += count
            conv = {
                "title": f"conversation {made}",
                "create_time": t,
                "mapping": mapping,
                "current_node": parent,
                "conversation_id": cid,
                "id": cid,
            }
            fp.write(("" if first else ",") + json.dumps(conv))
            first = False
        fp.write("]")


def baseline(path: Path, db: Path) -> int:
    data = json.load(path.open(encoding="utf-8"))
    rows = [
        (node["message"]["id"], "".join(p for p in node["message"]["content"]["parts"] if isinstance(p, str)))
        for conv in data
        for node in conv["mapping"].values()
        if node.get("message") and node["message"]["author"]["role"] != "system"
    ]
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE IF NOT EXISTS m (id TEXT PRIMARY KEY, text TEXT)")
    conn.execute("DELETE FROM m")
    conn.executemany("INSERT INTO m VALUES (?, ?)", rows)
    conn.commit()
    conn.close()
    return len(rows)


def ours(path: Path, fmt: str, record_id: str | None = None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        report = ingest_file(MemoryHome.resolve(tmp).corpus("bench"), path, fmt, record_id=record_id)
        dispose_engines()
        return report.stored


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--locomo",
        type=Path,
        default=shared_data_dir() / "locomo" / "locomo_dev.json",
    )
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "conversations.json"
        generate_chatgpt_export(export, args.messages)
        size_mb = export.stat().st_size / 1e6
        base_s, _, base_cpu, n_base = timed_cpu(lambda: baseline(export, Path(tmp) / "base.db"), args.repeat)
        ours_s, runs, ours_cpu, n = timed_cpu(lambda: ours(export, "chatgpt"), args.repeat)
        assert n == n_base == args.messages, (n, n_base)
        rows.append(
            {
                "input": f"chatgpt export {args.messages} msgs ({size_mb:.0f} MB)",
                "median_s": round(ours_s, 2),
                "msgs_per_s": round(n / ours_s),
                "cpu_s": round(ours_cpu, 2),
                "msgs_per_cpu_s": round(n / ours_cpu),
                "baseline_s": round(base_s, 2),
                "baseline_msgs_per_s": round(n / base_s),
                "ratio_vs_baseline": round(ours_s / base_s, 2),
            }
        )
    if args.locomo.exists():
        loc_s, _, loc_cpu, n = timed_cpu(lambda: ours(args.locomo, "locomo"), args.repeat)
        rows.append(
            {
                "input": f"LoCoMo dev, 5 conversations ({n} msgs)",
                "median_s": round(loc_s, 3),
                "msgs_per_s": round(n / loc_s),
                "cpu_s": round(loc_cpu, 3),
                "msgs_per_cpu_s": round(n / loc_cpu),
                "baseline_s": "",
                "baseline_msgs_per_s": "",
                "ratio_vs_baseline": "",
            }
        )
    print_table(rows)
    print(f"peak RSS {peak_rss_mib():.0f} MiB; runs (s): {[round(r, 2) for r in runs]}")


if __name__ == "__main__":
    main()

"""Page load times of the explorer (`memory-os explore`) on a built corpus: each page fetched over HTTP from a
server on loopback (the HTML complete: the memory read, the template rendered), first load and then warm.

    nice -n 10 python -m evals.benchmarks.bench_explorer --home DIR --corpus NAME [--repeat 7]

The server warms up first, as `memory-os explore` does at start (`--no-warm-up`: first loads then load the
memory). The heaviest page of each kind stands for it: the longest of the 200 newest conversations, the concept with
the most support (a hub with the most evidence), the subject with the most fact states, the largest topic.
Search pages ask several questions (ask and query_memory side by side); their baseline in the same run is
`query_memory` and `ask` called directly on the same warm pool, so the page's own cost shows apart. The
health page reads the Dagster instance of the home (DAGSTER_HOME).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from evals.benchmarks.common import print_table

QUESTIONS = (
    "Which database did we pick for the dashboard?",
    "Who is leading the migration this quarter?",
    "When is the budget review?",
    "Where did my sister move?",
)
LIMIT_MS = 1000.0  # the bound for a warm page


def _pages(home, corpus: str) -> dict[str, str]:
    from memory_query import ReaderPool, browse

    with ReaderPool(home) as pool:
        reader = pool.reader(corpus)
        conversation = max(browse.conversation_list(reader, limit=200).rows, key=lambda r: r.message_count)
        concept = browse.concept_list(reader, limit=1).rows
        subjects = browse.subject_list(reader).rows
        topics = browse.topic_map(reader).topics
        first_message = browse.conversation_view(reader, conversation.conversation_id).messages[0].message_id
    c = f"/c/{corpus}"
    pages = {
        "overview": c,
        "conversations": f"{c}/conversations",
        f"conversation ({conversation.message_count} msgs)": f"{c}/conversation/{conversation.conversation_id}",
        "message → conversation": f"{c}/message/{first_message}",
        "concepts": f"{c}/concepts",
        "profiles": f"{c}/profiles",
        "topics (map + tree)": f"{c}/topics",
        "health": f"{c}/health",
    }
    if concept:
        pages[f"concept ({concept[0].support_count} support)"] = f"{c}/concept/{concept[0].concept_id}"
    if subjects:
        pages[f"profile ({subjects[0].states} states)"] = f"{c}/profile/{subjects[0].subject}"
    if topics:
        largest = max(topics, key=lambda t: t.size)
        pages[f"topic ({largest.size} segments)"] = f"{c}/topic/{largest.topic_id}"
    for i, q in enumerate(QUESTIONS, 1):
        pages[f"search {i}: {q}"] = f"{c}/search?q={q}"
    return pages


def _fetch(client, path: str) -> tuple[float, int, int]:
    started = time.perf_counter()
    response = client.get(path, follow_redirects=True)
    return (time.perf_counter() - started) * 1000, response.status_code, len(response.content)


def _baseline(home, corpus: str, repeat: int) -> list[dict]:
    """`query_memory` and `ask` called directly on a warm pool: the search page's floor."""
    from memory_query import ReaderPool, query_memory
    from memory_query.api import ask

    rows = []
    with ReaderPool(home) as pool:
        query_memory(QUESTIONS[0], corpus, 8, pool=pool)
        for name, call in (
            ("query_memory (direct)", lambda q: query_memory(q, corpus, 8, pool=pool)),
            ("ask (direct)", lambda q: ask(q, corpus, pool=pool, trace=False)),
        ):
            times = []
            for _ in range(repeat):
                for q in QUESTIONS:
                    started = time.perf_counter()
                    call(q)
                    times.append((time.perf_counter() - started) * 1000)
            rows.append(_row(name, None, times, 200, 0))
    return rows


def _row(name: str, first: float | None, times: list[float], status: int, size: int) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "page": name,
        "first_ms": round(first, 1) if first is not None else "",
        "warm_p50_ms": round(statistics.median(times), 1),
        "warm_p95_ms": round(p95, 1),
        "warm_max_ms": round(max(times), 1),
        "status": status,
        "kib": round(size / 1024, 1),
        "≤1s": "yes" if max(times) <= LIMIT_MS else "NO",
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--home", required=True)
    ap.add_argument("--corpus", required=True)
    ap.add_argument("--repeat", type=int, default=7, help="warm loads per page")
    ap.add_argument(
        "--no-warm-up",
        action="store_true",
        help="skip the server's warm-up (first loads then load the memory)",
    )
    args = ap.parse_args(argv)

    import httpx2 as httpx

    from memory_core.store.db import MemoryHome
    from memory_explorer import Explorer
    from memory_explorer.server import running

    home = MemoryHome.resolve(args.home)
    pages = _pages(home, args.corpus)
    explorer = Explorer(home, agent_driver="offline")
    rows = []
    started = time.perf_counter()
    if not args.no_warm_up:  # as `memory-os explore` does at start, here waited for
        explorer.warm([args.corpus]).join()
        print(
            f"warm-up (memory, subjects, topic map, Dagster) {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
        )
    with running(explorer) as served, httpx.Client(base_url=served.base, timeout=300) as client:
        client.get(f"/?token={served.token}")
        for name, path in pages.items():
            first, status, size = _fetch(client, path)  # the first load: the memory the page reads is loaded
            times = [_fetch(client, path)[0] for _ in range(args.repeat)]
            rows.append(_row(name, first, times, status, size))
            print(f"{name}: first {first:.0f} ms, warm p50 {rows[-1]['warm_p50_ms']} ms", file=sys.stderr)
    explorer.close()
    print(f"server up and every page loaded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    rows += _baseline(home, args.corpus, max(1, args.repeat // 2))
    print_table(rows)
    slow = [r["page"] for r in rows if r["≤1s"] == "NO" and "direct" not in r["page"]]
    print(f"\nwarm pages over {LIMIT_MS:.0f} ms: {', '.join(slow) if slow else 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

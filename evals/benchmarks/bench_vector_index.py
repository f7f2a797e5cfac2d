"""Vector index benchmark: exact flat search against the approximate kinds (IVF, HNSW) on clustered
384-d vectors, through `memory_core.vector_index.FaissIndex` (what the `indexes` asset builds).

For each size and data preset: build time, median single-query latency over the queries (one query at a
time, as the read side asks), recall@10 against the flat index's exact top 10, and the latency ratio to
flat measured in the same run. This is how `DEFAULT_APPROXIMATE_THRESHOLD` was chosen.

    python -m evals.benchmarks.bench_vector_index [--sizes 10000,30000,100000] [--queries 300] [--no-hnsw]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from memory_core.vector_index.faiss_index import DEFAULT_APPROXIMATE_THRESHOLD, FaissIndex, IndexPolicy

# (centre scale, within-cluster spread, isotropic noise): median cosine of the 10th neighbour ≈ 0.5 for
# "clustered" (about what all-MiniLM-L6-v2 gives between related chat turns) and ≈ 0.42 for "overlapping"
PRESETS = {"clustered": (0.5, 1.5, 0.8), "overlapping": (0.3, 2.0, 1.0)}


def clustered_vectors(n: int, preset: str, dim: int = 384, seed: int = 0) -> np.ndarray:
    """Topics (~400 points each) grouped under broader themes, each topic varying in its own 32-d subspace."""
    centre_scale, spread, noise = PRESETS[preset]
    rng = np.random.default_rng(seed)
    k = max(20, n // 400)
    themes = rng.standard_normal((max(5, k // 10), dim)).astype(np.float32)
    centres = themes[rng.integers(0, len(themes), k)] + centre_scale * rng.standard_normal((k, dim)).astype(
        np.float32
    )
    basis = rng.standard_normal((k, 32, dim)).astype(np.float32) / np.sqrt(32)
    labels = rng.integers(0, k, n)
    x = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 20_000):  # chunks keep the einsum's temporary small
        lab = labels[start : start + 20_000]
        z = rng.standard_normal((len(lab), 32)).astype(np.float32)
        x[start : start + len(lab)] = (
            centres[lab]
            + spread * np.einsum("nl,nld->nd", z, basis[lab])
            + noise * rng.standard_normal((len(lab), dim)).astype(np.float32)
        )
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    return x


def measure(index: FaissIndex, queries: np.ndarray, truth: list[list[str]] | None) -> tuple[float, float]:
    latencies, hits = [], 0
    for i in range(len(queries)):
        t0 = time.perf_counter()
        found = index.search(queries[i], 10).ids[0]
        latencies.append(time.perf_counter() - t0)
        if truth is not None:
            hits += len(set(found) & set(truth[i]))
    recall = hits / (10 * len(queries)) if truth is not None else 1.0
    return statistics.median(latencies) * 1000, recall


def run(sizes: list[int], n_queries: int, hnsw: bool) -> list[dict]:
    rows = []
    for preset in PRESETS:
        for n in sizes:
            data = clustered_vectors(n + n_queries, preset)
            queries, vectors = data[:n_queries], data[n_queries:]
            ids = [f"v{i}" for i in range(n)]
            flat = FaissIndex(dim=384, policy=IndexPolicy(kind="flat"))
            flat.build(ids, vectors)
            truth = flat.search(queries, 10).ids
            flat_ms, _ = measure(flat, queries, None)
            rows.append(
                dict(
                    preset=preset,
                    n=n,
                    kind="flat",
                    params="",
                    build_s=flat.build_seconds,
                    median_ms=flat_ms,
                    recall10=1.0,
                    vs_flat=1.0,
                )
            )
            variants = [("ivf", IndexPolicy(kind="ivf", nprobe=p)) for p in (8, 16, 32)]
            if hnsw:
                variants += [("hnsw", IndexPolicy(kind="hnsw", hnsw_ef_search=ef)) for ef in (64, 128)]
            built: dict[str, FaissIndex] = {}
            for kind, policy in variants:
                # one build per kind; a search parameter is switched on the built index
                index = built.get(kind)
                if index is None:
                    index = FaissIndex(dim=384, policy=policy)
                    index.build(ids, vectors)
                    built[kind] = index
                if kind == "ivf":
                    index._index.nprobe = policy.nprobe
                    params = f"nlist={index.params['nlist']} nprobe={policy.nprobe}"
                else:
                    index._index.hnsw.efSearch = policy.hnsw_ef_search
                    params = f"M={policy.hnsw_m} ef={policy.hnsw_ef_search}"
                ms, recall = measure(index, queries, truth)
                rows.append(
                    dict(
                        preset=preset,
                        n=n,
                        kind=kind,
                        params=params,
                        build_s=index.build_seconds,
                        median_ms=ms,
                        recall10=recall,
                        vs_flat=ms / flat_ms,
                    )
                )
                print(
                    f"  {preset:11s} n={n:>7} {kind:4s} {params:22s} build {index.build_seconds:6.2f}s  median {ms:7.3f} ms  recall@10 {recall:.3f}",
                    flush=True,
                )
            print(
                f"  {preset:11s} n={n:>7} flat {'':22s} build {flat.build_seconds:6.2f}s  median {flat_ms:7.3f} ms",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--no-hnsw", action="store_true")
    args = parser.parse_args()
    rows = run([int(s) for s in args.sizes.split(",")], args.queries, not args.no_hnsw)
    print("\n| data | n | kind | params | build s | median ms/query | recall@10 | latency / flat |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['preset']} | {r['n']} | {r['kind']} | {r['params']} | {r['build_s']:.2f} | {r['median_ms']:.3f} | {r['recall10']:.3f} | {r['vs_flat']:.3f} |"
        )
    policy = IndexPolicy()
    print(
        f"\nproduct default: flat below {DEFAULT_APPROXIMATE_THRESHOLD} vectors, then {policy.approximate_kind} "
        f"(M={policy.hnsw_m}, efSearch={policy.hnsw_ef_search}; ivf: nprobe={policy.nprobe})"
    )


if __name__ == "__main__":
    main()

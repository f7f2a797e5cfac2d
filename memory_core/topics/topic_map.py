"""The 2-D topic map: the picture (PNG: segments as points coloured by topic, noise in grey, the largest topics
numbered at their centre and listed in a legend with their label and size; matplotlib is imported lazily
with the non-interactive Agg backend) and its layout as data (`topic_layout.json`: each topic's centre and a
sample of the segments' points), which the explorer's interactive map draws."""

from __future__ import annotations

import io
import json
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from memory_core.store.db import CorpusStore

MAX_LABELLED = 15
TOPIC_MAP_FILE = ("reports", "topic_map.png")
TOPIC_LAYOUT_FILE = ("reports", "topic_layout.json")
LAYOUT_POINTS = 4000  # segments' points kept in the layout (an even sample of them)


@dataclass
class TopicMap:
    """2-D coordinates of every segment for the topic map picture."""

    coords: np.ndarray  # (n, 2)
    labels: np.ndarray  # cluster per segment, -1 noise
    names: list[str]  # label per cluster
    method: str
    topic_ids: list[str] = field(default_factory=list)  # the stored topic id per cluster


def corpus_topic_map(store: CorpusStore, topic_map: TopicMap | None) -> tuple[bytes, Path] | None:
    """The corpus's topic map picture (PNG) and its file: drawn for a new build, the stored picture of the
    reused build when `topic_map` is None; None when there is no picture."""
    path = store.path(*TOPIC_MAP_FILE)
    if topic_map is not None:
        write_topic_layout(topic_map, store.path(*TOPIC_LAYOUT_FILE))
        return render_topic_map(topic_map, store.name, path), path
    return (path.read_bytes(), path) if path.exists() else None


def topic_layout(topic_map: TopicMap) -> dict:
    """The map as data: the method, each topic's centre (the median of its segments' points, where the
    picture numbers it) by topic id, and an even sample of the points as [x, y, cluster or -1]."""
    coords, labels = np.asarray(topic_map.coords, dtype=float), np.asarray(topic_map.labels)
    centres = {}
    for c, topic_id in enumerate(topic_map.topic_ids):
        members = coords[labels == c]
        if len(members):
            x, y = np.median(members, axis=0)
            centres[topic_id] = [round(float(x), 4), round(float(y), 4)]
    step = max(1, -(-len(coords) // LAYOUT_POINTS))
    points = [
        [round(float(x), 4), round(float(y), 4), int(c)]
        for (x, y), c in zip(coords[::step], labels[::step], strict=True)
    ]
    return {
        "method": topic_map.method,
        "topic_ids": list(topic_map.topic_ids),
        "centres": centres,
        "points": points,
        "segments": int(len(coords)),
        "noise": int((labels < 0).sum()),
    }


def write_topic_layout(topic_map: TopicMap, path: Path) -> None:
    """`topic_layout` as JSON at `path` (atomically); nothing when the map names no stored topics."""
    if not topic_map.topic_ids:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(topic_layout(topic_map)), encoding="utf-8")
    tmp.replace(path)


def ranked_clusters(sizes, names: list[str]) -> list[int]:
    """The clusters the map numbers, in number order: the largest first, ties by label (the order the
    catalog's legend table lists the stored topics in: size descending, then label)."""
    ranked = sorted(
        (c for c in range(min(len(sizes), len(names))) if sizes[c]), key=lambda c: (-sizes[c], names[c])
    )
    return ranked[:MAX_LABELLED]


def topic_legend(store: CorpusStore) -> list[dict[str, object]]:
    """The map's legend as rows (number on the map, label, segments, share, domain) from the stored topics,
    numbered in the map's order, then the noise: it reads without zooming into the picture. The domain is
    the stored assignment (none until the domains stage has run on these topics)."""
    from sqlalchemy import func, select

    from memory_core.store.schema import domains, topic_segments, topics

    with store.staging.connect() as conn:
        rows = conn.execute(
            select(topics.c.label, topics.c.size, domains.c.label.label("domain"))
            .select_from(topics.outerjoin(domains, topics.c.domain_id == domains.c.domain_id))
            .order_by(topics.c.size.desc(), topics.c.label)
        ).all()
        total = conn.execute(select(func.count()).select_from(topic_segments)).scalar_one()
        noise = conn.execute(
            select(func.count()).select_from(topic_segments).where(topic_segments.c.topic_id.is_(None))
        ).scalar_one()
    legend: list[dict[str, object]] = [
        {
            "number": number if number <= MAX_LABELLED else "",
            "label": r.label,
            "segments": r.size,
            "share": f"{r.size / total:.0%}" if total else "",
            "domain": r.domain or "—",
        }
        for number, r in enumerate(rows, start=1)
    ]
    if noise:
        legend.append(
            {
                "number": "",
                "label": "noise",
                "segments": noise,
                "share": f"{noise / total:.0%}",
                "domain": "—",
            }
        )
    return legend


def render_topic_map(topic_map: TopicMap, title: str, path: Path | None = None, dpi: int = 90) -> bytes:
    """The picture as PNG bytes; also written to `path` (atomically: temp file, then rename) when given."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    coords, labels = np.asarray(topic_map.coords), np.asarray(topic_map.labels)
    fig, ax = plt.subplots(figsize=(11, 6), dpi=dpi)
    try:
        noise = labels < 0
        if noise.any():
            ax.scatter(coords[noise, 0], coords[noise, 1], s=4, c="#c8c8c8", linewidths=0, label="noise")
        clustered = ~noise
        if clustered.any():
            cmap = plt.get_cmap("tab10")  # strong colours, none close to the noise grey
            ax.scatter(
                coords[clustered, 0],
                coords[clustered, 1],
                s=6,
                c=[cmap(int(c) % 10) for c in labels[clustered]],
                linewidths=0,
            )
        sizes = np.bincount(labels[clustered], minlength=len(topic_map.names)) if clustered.any() else []
        legend = []
        for rank, c in enumerate(ranked_clusters(sizes, topic_map.names), start=1):
            centre = np.median(coords[labels == c], axis=0)
            # the number on the map, the label and size in the legend (long labels never cover the points)
            ax.annotate(
                str(rank),
                centre,
                fontsize=8,
                ha="center",
                va="center",
                bbox={"boxstyle": "circle,pad=0.2", "fc": "white", "alpha": 0.85, "lw": 0},
            )
            name = textwrap.shorten(topic_map.names[c], 40, placeholder="…")
            legend.append(
                plt.Line2D(
                    [], [], marker="o", ls="", color=cmap(int(c) % 10), label=f"{rank}. {name} ({sizes[c]})"
                )
            )
        if noise.any():
            legend.append(
                plt.Line2D([], [], marker="o", ls="", color="#c8c8c8", label=f"noise ({int(noise.sum())})")
            )
        if legend:
            ax.legend(handles=legend, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=7, frameon=False)
        n_topics = len(topic_map.names)
        ax.set_title(
            f"{title}: {n_topics} topics, {int(noise.sum())} noise segments ({topic_map.method})", fontsize=9
        )
        ax.set_xticks([])
        ax.set_yticks([])
        buffer = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buffer, format="png")
    finally:
        plt.close(fig)
    data = buffer.getvalue()
    if path is not None:
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    return data

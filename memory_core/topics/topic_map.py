"""The 2-D topic map picture (PNG): segments as points coloured by topic, noise in grey, the largest topics
labelled at their centre. matplotlib is imported lazily with the non-interactive Agg backend."""

from __future__ import annotations

import io
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memory_core.store.db import CorpusStore

MAX_LABELLED = 15
TOPIC_MAP_FILE = ("reports", "topic_map.png")


@dataclass
class TopicMap:
    """2-D coordinates of every segment for the topic map picture."""

    coords: np.ndarray  # (n, 2)
    labels: np.ndarray  # cluster per segment, -1 noise
    names: list[str]  # label per cluster
    method: str


def corpus_topic_map(store: CorpusStore, topic_map: TopicMap | None) -> tuple[bytes, Path] | None:
    """The corpus's topic map picture (PNG) and its file: drawn for a new build, the stored picture of the
    reused build when `topic_map` is None; None when there is no picture."""
    path = store.path(*TOPIC_MAP_FILE)
    if topic_map is not None:
        return render_topic_map(topic_map, store.name, path), path
    return (path.read_bytes(), path) if path.exists() else None


def render_topic_map(topic_map: TopicMap, title: str, path: Path | None = None, dpi: int = 90) -> bytes:
    """The picture as PNG bytes; also written to `path` (atomically: temp file, then rename) when given."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    coords, labels = np.asarray(topic_map.coords), np.asarray(topic_map.labels)
    fig, ax = plt.subplots(figsize=(8, 6), dpi=dpi)
    try:
        noise = labels < 0
        if noise.any():
            ax.scatter(coords[noise, 0], coords[noise, 1], s=4, c="#c8c8c8", linewidths=0, label="noise")
        clustered = ~noise
        if clustered.any():
            cmap = plt.get_cmap("tab20")
            ax.scatter(
                coords[clustered, 0],
                coords[clustered, 1],
                s=6,
                c=[cmap(int(c) % 20) for c in labels[clustered]],
                linewidths=0,
            )
        sizes = np.bincount(labels[clustered], minlength=len(topic_map.names)) if clustered.any() else []
        for c in np.argsort(-np.asarray(sizes), kind="stable")[:MAX_LABELLED]:
            if c >= len(topic_map.names) or sizes[c] == 0:
                continue
            centre = np.median(coords[labels == c], axis=0)
            ax.annotate(
                textwrap.shorten(topic_map.names[c], 32, placeholder="…"),
                centre,
                fontsize=7,
                ha="center",
                bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.75, "lw": 0},
            )
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

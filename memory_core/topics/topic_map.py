"""The 2-D topic map picture (PNG): segments as points coloured by topic, noise in grey, the largest topics
numbered at their centre and listed in a legend with their label and size. matplotlib is imported lazily with the non-interactive Agg backend."""

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
        for rank, c in enumerate(np.argsort(-np.asarray(sizes), kind="stable")[:MAX_LABELLED], start=1):
            if c >= len(topic_map.names) or sizes[c] == 0:
                continue
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

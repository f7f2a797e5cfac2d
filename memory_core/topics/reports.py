"""Reports of the topic-layer stages (`topics`, `weighted_links`, `domains`).

A build's `figures` are what its `topic_builds` row records (a reused build reports the figures of the
build it reuses); `as_metadata` adds what this run did (status, describer, its own wall time).
"""

from __future__ import annotations

from dataclasses import dataclass

from memory_core.reports import Figures
from memory_core.topics.topic_map import TopicMap


@dataclass
class TopicsReport:
    status: str  # built | unchanged | empty
    figures: dict
    trials: list[dict]
    map: TopicMap | None = None
    reactions_linked: int = 0
    describer: str = ""
    seconds: float = 0.0  # this run, reuse and reaction linking included

    def as_metadata(self) -> Figures:
        f = self.figures
        build_seconds = f.get("seconds") or 0.0
        return {
            "status": self.status,
            "segments": f["segments"],
            "topics": f["topics"],
            "noise_segments": f["noise_segments"],
            "noise_ratio": f["noise_ratio"],
            "silhouette": f["silhouette"],
            "silhouette_space": f.get("silhouette_space", ""),
            "silhouette_embedding": f["silhouette_embedding"],
            "silhouette_reduced": f["silhouette_reduced"],
            "outlier_mean": f["outlier_mean"],
            "objective": f["objective"],
            "path": f["path"],
            "reduction": f["reduction"],
            "best_params": f["params"] or {},
            "trials_run": f["trials_run"],
            "best_trial": f["best_trial"] if f["best_trial"] is not None else -1,
            "search_truncated_by_time": f["truncated"],
            "search_stopped": f.get("stopped", "budget"),
            "warm_start_trials": f.get("warm_started", 0),
            "topic_sizes": f["sizes"],
            "size_min": f["size_min"],
            "size_median": f["size_median"],
            "size_max": f["size_max"],
            "label_centroid_distance": f["label_centroid_distance_mean"],
            "label_centroid_distance_median": f["label_centroid_distance_median"],
            "label_centroid_distance_max": f["label_centroid_distance_max"],
            "label_only_centroid_distance": f["label_only_distance_mean"],
            "trial_history": self.trials,
            "topics_table": f["topic_table"],
            "reactions_linked": self.reactions_linked,
            "embedding_model": f["embedding_model"],
            "describer": self.describer,
            "llm_calls": f.get("llm_calls", 0),
            "seconds": round(self.seconds, 3),
            "build_seconds": build_seconds,
            "embed_seconds": f["embed_seconds"],
            "tune_seconds": f["tune_seconds"],
            "umap_warmup_seconds": f["umap_warmup_seconds"],
            "umap_compile_share": round(f["umap_warmup_seconds"] / build_seconds, 4)
            if build_seconds
            else 0.0,
            "umap_fit_seconds_median": f["umap_fit_seconds_median"]
            if f["umap_fit_seconds_median"] is not None
            else 0.0,
            "label_seconds": f["label_seconds"],
            "write_seconds": f.get("write_seconds", 0.0),
        }

    def summary(self, corpus: str) -> str:
        f = self.figures
        return (
            f"{corpus}: {self.status}, {f['topics']} topics, noise {f['noise_ratio']}, "
            f"silhouette {f['silhouette']}"
        )


@dataclass
class LinksReport:
    figures: dict
    topic_table: list[dict]

    def as_metadata(self) -> Figures:
        return {
            **{k: v for k, v in self.figures.items() if v is not None},
            "topics_with_top_concepts": self.topic_table,
        }


@dataclass
class DomainsReport:
    status: str  # built | unchanged | empty
    figures: dict
    trials: list[dict]
    describer: str = ""
    seconds: float = 0.0  # this run

    def as_metadata(self) -> Figures:
        f = dict(self.figures)
        table = f.pop("domain_table")
        return {
            "status": self.status,
            **{k: v for k, v in f.items() if v is not None and not isinstance(v, (list, dict))},
            "domain_sizes": f["domain_sizes"],
            "best_params": f["params"] or {},
            "domains_table": table,
            "trial_history": self.trials,
            "describer": self.describer,
            "seconds": round(self.seconds, 3),
            "build_seconds": f["seconds"],
        }

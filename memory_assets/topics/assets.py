"""Assets `topics`, `weighted_links` and `domains`: the topic layer (docs/architecture.md §4.5-4.7), thin wrappers over
memory_core.topics."""

import base64
from dataclasses import replace
from pathlib import Path

import dagster as dg
from pydantic import Field

from memory_assets.common import (
    Table,
    check_specs,
    corpus_store,
    evaluate_contracts,
    materialize_result,
    md_table,
)
from memory_assets.partitions import corpus_partitions
from memory_assets.topics import checks
from memory_assets.topics.checks import TopicQualityBoundsConfig
from memory_core.progress import progress_to
from memory_core.store.db import CorpusStore
from memory_core.topics.clustering import ObjectiveWeights
from memory_core.topics.describe import Describer, LLMDescriber
from memory_core.topics.domains import DomainsConfig, build_domains, default_domain_tuner
from memory_core.topics.links import LinkConfig, build_links
from memory_core.topics.stage import TopicsConfig, build_topics
from memory_core.topics.topic_map import corpus_topic_map, topic_legend
from memory_core.topics.tuner import SearchSpace, TunerConfig
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage

_TUNER = TunerConfig()
_SPACE = SearchSpace()
_WEIGHTS = ObjectiveWeights()
_TOPICS = TopicsConfig()
_LINKS = LinkConfig()
_DOMAINS = DomainsConfig()
_DOMAIN_TUNER = default_domain_tuner()
TRIAL_COLUMNS = [
    "trial",
    "n_components",
    "n_neighbors",
    "min_dist",
    "min_cluster_size",
    "min_samples",
    "cluster_selection_method",
    "n_clusters",
    "noise_ratio",
    "silhouette_embedding",
    "silhouette_reduced",
    "outlier_mean",
    "objective",
    "seconds",
]
TRIAL_TABLE = Table(TRIAL_COLUMNS, limit=500)


class TopicsAssetConfig(dg.Config):
    """Tuning budget, search space, objective weights and labelling of the topics stage."""

    n_trials: int = Field(default=_TUNER.n_trials, description="Optuna trials: the search's budget")
    patience: int = Field(
        default=_TUNER.patience,
        description="stop after this many trials in a row without improvement (0: the whole budget)",
    )
    min_improvement: float = Field(
        default=_TUNER.min_improvement, description="an objective gain smaller than this is no improvement"
    )
    startup_trials: int = Field(
        default=_TUNER.startup_trials, description="TPE's random trials (warm-start points count)"
    )
    warm_start: bool = Field(
        default=_TUNER.warm_start,
        description="try the last build's best parameters and a size prior first",
    )
    timeout_s: float = Field(
        default=_TUNER.timeout_s,
        description="safety cap of the tuning in seconds (reported when it cuts the search; not a budget)",
    )
    seed: int = Field(default=_TUNER.seed, description="seed of the sampler, UMAP and sampling")
    reduction: str = Field(default=_TUNER.reduction, description="auto | umap | pca | none")
    min_points: int = Field(default=_TUNER.min_points, description="fewer segments → one topic of everything")
    umap_min_points: int = Field(
        default=_TUNER.umap_min_points, description="auto: fewer segments → PCA instead of UMAP"
    )
    tune_sample_size: int = Field(
        default=_TUNER.tune_sample_size, description="more segments → trials on a sample"
    )
    umap_epochs: int = Field(default=_TUNER.umap_epochs, description="UMAP optimisation epochs")
    n_neighbors: list[int] = Field(
        default=list(_SPACE.n_neighbors), description="UMAP n_neighbors [min, max]"
    )
    n_components: list[int] = Field(
        default=list(_SPACE.n_components), description="reduced dimensions [min, max]"
    )
    min_dist: list[float] = Field(default=list(_SPACE.min_dist), description="UMAP min_dist [min, max]")
    min_cluster_size: list[int] = Field(
        default=list(_SPACE.min_cluster_size), description="HDBSCAN [min, max]"
    )
    min_samples: list[int] = Field(default=list(_SPACE.min_samples), description="HDBSCAN [min, max]")
    selection_methods: list[str] = Field(
        default=list(_SPACE.selection_methods), description="eom and/or leaf"
    )
    weight_silhouette: float = _WEIGHTS.silhouette
    weight_noise: float = _WEIGHTS.noise
    weight_outlier: float = _WEIGHTS.outlier
    weight_granularity: float = Field(
        default=_WEIGHTS.granularity, description="0 = the plain three-term objective"
    )
    target_topic_size: int = Field(
        default=_WEIGHTS.target_cluster_size, description="segments per topic aimed at"
    )
    silhouette_space: str = Field(
        default=_WEIGHTS.silhouette_space, description="embedding (cosine) | reduced"
    )
    label_terms: int = _TOPICS.label_terms
    profile_terms: int = _TOPICS.profile_terms
    candidate_terms: int = _TOPICS.candidate_terms
    rerank_terms: bool = Field(
        default=_TOPICS.rerank_terms, description="order label terms by cosine to the centroid"
    )
    describe_with_llm: bool = Field(
        default=True, description="labels from the LLM when the llm resource has one"
    )
    force: bool = Field(
        default=False, description="rebuild even when segments and configuration are unchanged"
    )
    quality_bounds: TopicQualityBoundsConfig = Field(
        default_factory=TopicQualityBoundsConfig,
        description="bounds of the two warning checks (silhouette, noise share): flag drift, stop nothing",
    )

    def topics_config(self) -> TopicsConfig:
        return TopicsConfig(
            tuner=TunerConfig(
                n_trials=self.n_trials,
                patience=self.patience,
                min_improvement=self.min_improvement,
                startup_trials=self.startup_trials,
                warm_start=self.warm_start,
                timeout_s=self.timeout_s,
                seed=self.seed,
                reduction=self.reduction,
                min_points=self.min_points,
                umap_min_points=self.umap_min_points,
                tune_sample_size=self.tune_sample_size,
                umap_epochs=self.umap_epochs,
                space=SearchSpace(
                    n_neighbors=tuple(self.n_neighbors),
                    n_components=tuple(self.n_components),
                    min_dist=tuple(self.min_dist),
                    min_cluster_size=tuple(self.min_cluster_size),
                    min_samples=tuple(self.min_samples),
                    selection_methods=tuple(self.selection_methods),
                ),
                weights=ObjectiveWeights(
                    silhouette=self.weight_silhouette,
                    noise=self.weight_noise,
                    outlier=self.weight_outlier,
                    granularity=self.weight_granularity,
                    target_cluster_size=self.target_topic_size,
                    silhouette_space=self.silhouette_space,
                ),
            ),
            label_terms=self.label_terms,
            profile_terms=self.profile_terms,
            candidate_terms=self.candidate_terms,
            rerank_terms=self.rerank_terms,
            force=self.force,
        )


def _describer(enabled: bool, llm: LLMResource, storage: MemoryStorage) -> Describer:
    client = llm.build_client(storage.memory_home()) if enabled else None
    return LLMDescriber(client) if client is not None else Describer()


def _picture_metadata(picture: tuple[bytes, Path] | None, store: CorpusStore) -> dict[str, dg.MetadataValue]:
    """The topic map inline, its file, and its legend as a table (numbers as on the map)."""
    if picture is None:
        return {}
    png, path = picture
    corpus = store.name
    # the Dagster UI renders it: its Markdown sanitiser (MarkdownWithPlugins, dagster-webserver 1.13) adds
    # `data` to the allowed image-source protocols; long Markdown sits behind the panel's "Show Markdown"
    image = f"![topic map of {corpus}](data:image/png;base64,{base64.b64encode(png).decode('ascii')})"
    return {
        "topic_map": dg.MetadataValue.md(image),
        "topic_map_legend": _legend(store),
        "topic_map_path": dg.MetadataValue.path(str(path)),
    }


def _legend(store: CorpusStore) -> dg.MetadataValue:
    return md_table(topic_legend(store), limit=LEGEND_ROWS)


LEGEND_ROWS = 60


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="topics",
    deps=["segments", "user_reactions"],
    kinds={"sqlite"},
    check_specs=check_specs("topics", checks.TOPICS),
    description="Segment embeddings → UMAP → HDBSCAN tuned by Optuna: topics with centroid, label/profile (LLM or "
    "c-TF-IDF) and label-centroid distance; every segment BELONGS_TO its topic or is noise (topic NULL, nearest "
    "topic kept); reactions are linked DURING the topic of their segment.",
)
def topics(
    context: dg.AssetExecutionContext,
    config: TopicsAssetConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    embedder = embeddings.cached_embedder(storage.memory_home())
    describer = _describer(config.describe_with_llm, llm, storage)
    with store.write_lock(), progress_to(context.log.info):
        report = build_topics(
            store, embedder, config.topics_config(), describer, run_id=context.run_id, log=context.log.info
        )
    picture = corpus_topic_map(store, report.map)
    context.log.info(report.summary(store.name))
    return materialize_result(
        report,
        store=store,
        asset_key="topics",
        tables={"trial_history": TRIAL_TABLE, "topics_table": Table(limit=40)},
        extra=_picture_metadata(picture, store),
        checks=evaluate_contracts(
            context, "topics", checks.TOPICS, store=store, bounds=config.quality_bounds.bounds()
        ),
    )


class WeightedLinksConfig(dg.Config):
    top_k: int = Field(default=_LINKS.top_k, description="links kept per topic")
    min_weight: float = Field(
        default=_LINKS.min_weight, description="kept links have weight > this (0-100 scale)"
    )
    normalisation: str = Field(
        default=_LINKS.normalisation, description="global (comparable weights) | per_topic"
    )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="topics",
    deps=[topics, "canonical_concepts"],
    kinds={"sqlite"},
    check_specs=check_specs("weighted_links", checks.WEIGHTED_LINKS),
    description="Topic RELATED_TO Concept: cosine of every topic centroid to every concept embedding (cached key "
    "'{title}: {description}'), min-max normalised to 0-100, top k per topic above the minimum weight.",
)
def weighted_links(
    context: dg.AssetExecutionContext,
    config: WeightedLinksConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    embedder = embeddings.cached_embedder(storage.memory_home())
    link_config = LinkConfig(
        top_k=config.top_k, min_weight=config.min_weight, normalisation=config.normalisation
    )
    with store.write_lock(), progress_to(context.log.info):
        report = build_links(store, embedder, link_config, run_id=context.run_id, log=context.log.info)
    return materialize_result(
        report,
        store=store,
        asset_key="weighted_links",
        tables={"topics_with_top_concepts": Table(limit=60)},
        checks=evaluate_contracts(context, "weighted_links", checks.WEIGHTED_LINKS, store=store),
    )


class DomainsAssetConfig(dg.Config):
    n_trials: int = Field(default=_DOMAIN_TUNER.n_trials, description="Optuna trials for clustering topics")
    timeout_s: float = Field(default=_DOMAIN_TUNER.timeout_s, description="time budget, seconds")
    seed: int = _DOMAIN_TUNER.seed
    target_topics_per_domain: int = Field(
        default=_DOMAIN_TUNER.weights.target_cluster_size, description="granularity target of the objective"
    )
    anchors_per_domain: int = Field(
        default=_DOMAINS.anchors_per_domain, description="anchor entities kept per domain"
    )
    min_anchor_topics: int = Field(
        default=_DOMAINS.min_anchor_topics,
        description="an anchor is associated with at least this many topics",
    )
    anchor_types: list[str] = Field(
        default=list(_DOMAINS.anchor_types), description="concept types preferred as anchors"
    )
    other_type_factor: float = Field(
        default=_DOMAINS.other_type_factor, description="score factor of other types"
    )
    min_anchor_support: int = Field(
        default=_DOMAINS.min_anchor_support,
        description="segments an entity or project needs evidence in to anchor a domain",
    )
    describe_with_llm: bool = Field(
        default=True, description="labels from the LLM when the llm resource has one"
    )
    force: bool = False

    def domains_config(self) -> DomainsConfig:
        tuner = replace(
            _DOMAIN_TUNER,
            n_trials=self.n_trials,
            timeout_s=self.timeout_s,
            seed=self.seed,
            weights=replace(_DOMAIN_TUNER.weights, target_cluster_size=self.target_topics_per_domain),
        )
        return DomainsConfig(
            tuner=tuner,
            anchors_per_domain=self.anchors_per_domain,
            min_anchor_topics=self.min_anchor_topics,
            anchor_types=tuple(self.anchor_types),
            other_type_factor=self.other_type_factor,
            min_anchor_support=self.min_anchor_support,
            force=self.force,
        )


@dg.asset(
    partitions_def=corpus_partitions,
    group_name="topics",
    deps=[topics, weighted_links],
    kinds={"sqlite"},
    check_specs=check_specs("domains", checks.DOMAINS),
    description="Domains (topics clustered by their profile embeddings) and Anchor Entities (the concepts most "
    "linked across a domain's topics): Topic BELONGS_TO AnchorEntity BELONGS_TO Domain.",
)
def domains(
    context: dg.AssetExecutionContext,
    config: DomainsAssetConfig,
    storage: MemoryStorage,
    embeddings: EmbeddingsResource,
    llm: LLMResource,
) -> dg.MaterializeResult:
    store = corpus_store(context, storage)
    embedder = embeddings.cached_embedder(storage.memory_home())
    describer = _describer(config.describe_with_llm, llm, storage)
    with store.write_lock(), progress_to(context.log.info):
        report = build_domains(
            store, embedder, config.domains_config(), describer, run_id=context.run_id, log=context.log.info
        )
    return materialize_result(
        report,
        store=store,
        asset_key="domains",
        tables={"domains_table": Table(limit=60), "trial_history": TRIAL_TABLE},
        extra={"topic_map_legend": _legend(store)},  # the topics' map legend, now with their domains
        checks=evaluate_contracts(context, "domains", checks.DOMAINS, store=store),
    )

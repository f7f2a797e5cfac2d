"""Every `dg.Config` of the code location maps the core settings it configures: each field of the core
dataclass (or keyword parameter of the core function) is exposed with the same default, except the fields
listed below as deliberately unexposed; each field of the Config is a core field or listed as the asset's own.
The same holds for the resources and their core settings. A new Config class, a new core field or a changed
default fails here until it is mapped. The code is only read (nothing runs)."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import dagster as dg
import pytest

import memory_assets


@dataclass
class Maps:
    """One Config (or resource) and the core settings it configures."""

    core: Callable[[], object]  # the core defaults: a dataclass instance, or a function with keyword defaults
    renamed: dict[str, str] = field(default_factory=dict)  # core field (dotted when nested) → Config field
    unexposed: dict[str, str] = field(default_factory=dict)  # core field → why it is not configurable
    own: dict[str, str] = field(default_factory=dict)  # Config field with no core field → what it decides
    own_default: dict[str, str] = field(default_factory=dict)  # core field whose default the asset overrides


def _mod(name: str):
    return importlib.import_module(name)


def _topics():
    return _mod("memory_assets.topics.assets")


def _loop():
    return _mod("memory_assets.consolidation.assets")


def _gardener():
    return _mod("memory_assets.gardener.assets")


def _core_defaults(core: object, prefix: str = "") -> dict[str, object]:
    """Dotted field name → default, nested dataclasses flattened."""
    if core is None:
        return {}
    if dataclasses.is_dataclass(core):
        out: dict[str, object] = {}
        for f in dataclasses.fields(core):
            value = getattr(core, f.name)
            if dataclasses.is_dataclass(value):
                out.update(_core_defaults(value, f"{prefix}{f.name}."))
            else:
                out[prefix + f.name] = value
        return out
    return {
        name: p.default
        for name, p in inspect.signature(core).parameters.items()
        if p.default is not inspect.Parameter.empty
    }


def _because(reason: str, *names: str) -> dict[str, str]:
    return dict.fromkeys(names, reason)


def _nested_fields(core: Callable[[], object]) -> list[str]:
    return list(_core_defaults(core()))


# the core classes are taken from the asset modules' own imports: what the asset really builds
CONFIGS: dict[str, Maps] = {
    "MessagesConfig": Maps(
        core=lambda: _mod("memory_core.ingest.loader").ingest_file,
        unexposed={
            "record_id": "the registered corpus's record, not run config",
            "sha256": "the stage's own hash of the file (one hash for the memo key and the ingest)",
        },
    ),
    "SegmentsConfig": Maps(
        core=lambda: _mod("memory_core.segments").build_segments,
        unexposed={"batch": "conversations per write transaction: memory, not behaviour"},
    ),
    "ExtractionConfig": Maps(
        core=lambda: _mod("memory_core.extraction.stage").extract_corpus,
        renamed={"parallel": "parallel_calls", "retention_days": "reaction_retention_days"},
        unexposed={
            "log": "a callback (the asset logs through its context)",
            "cache": "the memory home's LLM cache, whose answers retention redacts (a resource, not a setting)",
        },
        own_default={"parallel": "the asset runs 4 LLM calls at once; the library call is sequential"},
    ),
    "ConsolidationConfig": Maps(
        core=lambda: _loop().LoopConfig(),
        renamed={
            "weights.similarity": "weight_similarity",
            "weights.lexical": "weight_lexical",
            "weights.graph": "weight_graph",
            "weights.temporal": "weight_temporal",
        },
        unexposed={
            "rules.min_title_chars": "a title shorter than this is not a name (a data rule)",
            "weights.conversation_graph": "graph score of a same-conversation candidate (a fixed fraction)",
            "weights.temporal_scale_days": "decay scale of the temporal score",
        },
        own={
            "high_confidence": "threshold of the high-confidence coverage figure (metadata)",
            "purity_threshold": "threshold of the purity figure (metadata)",
            "llm_adjudicator": "ask the llm resource's model in the ambiguous band when it has one",
        },
    ),
    "FactStatesConfig": Maps(
        core=lambda: _mod("memory_assets.revision.assets").FactConfig(),
        own={"llm_adjudicator": "ask the llm resource's model what the rules cannot settle, when it has one"},
    ),
    "RepairsConfig": Maps(core=lambda: _mod("memory_assets.revision.assets").RepairConfig()),
    "TopicsAssetConfig": Maps(
        core=lambda: _topics().TopicsConfig(),
        renamed={
            "tuner.weights.silhouette": "weight_silhouette",
            "tuner.weights.noise": "weight_noise",
            "tuner.weights.outlier": "weight_outlier",
            "tuner.weights.granularity": "weight_granularity",
            "tuner.weights.target_cluster_size": "target_topic_size",
        },
        unexposed={
            "tuner.space.max_cluster_share": "a guard of the objective against one giant cluster",
            "tuner.exact_knn_max": "from this size UMAP's approximate neighbour graph (cost, not quality)",
            "representatives": "representative segments stored per topic",
            "llm_excerpts": "segments shown to the LLM describer",
            "embed_batch": "texts per embedder call (memory, not behaviour)",
        },
        own={
            "describe_with_llm": "labels from the LLM when the llm resource has one",
            "quality_bounds": "the bounds of its two warning checks (TopicQualityBoundsConfig, mapped apart)",
        },
    ),
    "WeightedLinksConfig": Maps(core=lambda: _topics().LinkConfig()),
    "DomainsAssetConfig": Maps(
        core=lambda: _topics().DomainsConfig(),
        renamed={"tuner.weights.target_cluster_size": "target_topics_per_domain"},
        unexposed={
            **{
                f"tuner.{name}": "the domain tuner's search space and objective are fixed (few points)"
                for name in _nested_fields(lambda: _topics().DomainsConfig().tuner)
                if name not in ("n_trials", "timeout_s", "seed", "weights.target_cluster_size")
            },
            "label_terms": "domain labels use the topic labelling's term counts",
            "profile_terms": "as above",
        },
        own={"describe_with_llm": "labels from the LLM when the llm resource has one"},
    ),
    "TopicQualityBoundsConfig": Maps(
        core=lambda: _mod("memory_core.topics.checks").TopicQualityBounds(),
    ),
    "GraphConfig": Maps(
        core=lambda: _mod("memory_core.graph").load_corpus_graph,
        renamed={"reflective": "include_reflective"},
    ),
    "IndexesConfig": Maps(
        core=lambda: _mod("memory_core.vector_index.stage").build_indexes,
        renamed={"batch_size": "embed_batch_size"},
        unexposed={"policy": "the vector_index resource's", "log": "the asset's logger"},
    ),
    "TriageAssetConfig": Maps(
        core=lambda: _gardener().TriageConfig(),
        unexposed=_because(
            "a scoring constant of the triage heuristics, not a threshold to tune per run",
            "max_cited",
            "merge_min_cosine",
            "merge_neighbours",
            "merge_weights",
            "max_merge_group",
            "max_name_block",
            "compatible_types",
            "split_min_evidence",
            "split_min_cluster",
            "split_people_penalty",
            "split_full_separation",
            "macro_min_support",
            "macro_min_spread",
            "macro_spread_ref",
            "macro_support_ref",
            "macro_members_ref",
            "weak_single_weight",
            "template_min_concepts",
        ),
        own={
            "llm_review": "review the offline proposals with the LLM when one is configured",
            "llm_batch_size": "proposals per LLM review call",
        },
    ),
    "RefactorConfig": Maps(
        core=lambda: _gardener().ChooserRules(),
        unexposed=_because(
            "a rule constant of the chooser, not a threshold to tune per run",
            "split_context_margin",
            "chit_chat_words",
            "max_relations_per_hub",
            "hub_alias_limit",
            "segments_per_concept",
        ),
        own={
            "dry_run": "plan and report only",
            "proposal_ids": "which proposals",
            "categories": "which categories",
            "chooser": "rules or llm",
            "max_actions": "a bounded run",
            "purity_threshold": "threshold of the purity figure (report)",
        },
    ),
}

RESOURCES: dict[str, Maps] = {
    "LLMResource": Maps(core=lambda: _mod("memory_core.llm.factory").LLMSettings()),
    "GraphResource": Maps(core=lambda: _mod("memory_core.graph").GraphSettings()),
    "NlpResource": Maps(
        core=lambda: _mod("memory_core.nlp").NlpSpec(),
        own={"use_cache": "keep parses in the memory home's shared parse cache"},
    ),
    "VectorIndexResource": Maps(
        core=lambda: _mod("memory_core.vector_index").IndexPolicy(),
        unexposed={
            "ivf_train_iterations": "k-means iterations of IVF training",
            "seed": "reproducible builds",
        },
    ),
}


def _classes(package, base: type) -> dict[str, type]:
    found = {}
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if inspect.isclass(obj) and issubclass(obj, base) and obj.__module__ == module.__name__:
                found[obj.__name__] = obj
    return found


def _config_defaults(cls: type) -> dict[str, object]:
    return {
        name: f.default_factory() if f.default_factory is not None else f.default
        for name, f in cls.model_fields.items()
    }


def _comparable(value: object) -> object:
    return list(value) if isinstance(value, tuple | list) else value


def _mismatches(cls: type, maps: Maps) -> list[str]:
    core = _core_defaults(maps.core())
    exposed = _config_defaults(cls)
    problems = []
    stale = [n for n in [*maps.unexposed, *maps.renamed, *maps.own_default] if n not in core]
    problems += [f"{cls.__name__}: listed core field {n!r} does not exist" for n in stale]
    mapped = set()
    for name, default in core.items():
        if name in maps.unexposed:
            continue
        target = maps.renamed.get(name, name.rsplit(".", 1)[-1])
        mapped.add(target)
        if target not in exposed:
            problems.append(f"{cls.__name__}: core field {name!r} is not exposed (as {target!r})")
        elif name not in maps.own_default and _comparable(exposed[target]) != _comparable(default):
            problems.append(
                f"{cls.__name__}.{target} defaults to {exposed[target]!r}, the core to {default!r}"
            )
    unmapped = set(exposed) - mapped - set(maps.own)
    problems += [
        f"{cls.__name__}.{n}: neither a core field nor listed as the asset's own" for n in sorted(unmapped)
    ]
    problems += [f"{cls.__name__}: {n!r} listed as own but not a field" for n in set(maps.own) - set(exposed)]
    return problems


def test_every_config_class_is_mapped():
    assert set(_classes(memory_assets, dg.Config)) == set(CONFIGS)


def test_every_resource_with_core_settings_is_mapped():
    import memory_resources

    resources = _classes(memory_resources, dg.ConfigurableResource)
    # storage and embeddings configure objects with their own shapes (a memory home; an embedder spec)
    assert set(resources) - set(RESOURCES) == {"MemoryStorage", "EmbeddingsResource"}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_exposes_its_core_settings_with_the_same_defaults(name):
    assert _mismatches(_classes(memory_assets, dg.Config)[name], CONFIGS[name]) == []


@pytest.mark.parametrize("name", sorted(RESOURCES))
def test_resource_exposes_its_core_settings_with_the_same_defaults(name):
    import memory_resources

    assert _mismatches(_classes(memory_resources, dg.ConfigurableResource)[name], RESOURCES[name]) == []

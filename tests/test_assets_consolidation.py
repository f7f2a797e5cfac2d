"""Layer 3: materialise canonical_concepts of a corpus partition (mentions written as the mapper would)."""

from __future__ import annotations

import dagster as dg
from sqlalchemy import func, select

from memory_assets.common import report_figures
from memory_assets.definitions import default_resources, defs
from memory_assets.partitions import corpus_partitions
from memory_core.corpora import plan_corpora, register
from memory_core.store.schema import action_log, canonical_concepts
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource
from memory_resources.storage import MemoryStorage
from tests.conftest import write_jsonl
from tests.loop_samples import MENTIONS, add_mentions, jsonl_rows

# hashing vectors agree less than a sentence model's on paraphrases: a shared name needs less cosine
RUN_CONFIG = {"ops": {"canonical_concepts": {"config": {"alias_attach_similarity": 0.3, "batch_size": 4}}}}


def _materialize(instance, home, selection, run_config=None):
    return dg.materialize(
        list(defs.assets),
        selection=selection,
        instance=instance,
        partition_key="dana",
        resources={
            **default_resources(),
            "storage": MemoryStorage(home=str(home.root)),
            "embeddings": EmbeddingsResource(provider="hashing"),
            "llm": LLMResource(teacher="offline"),  # no LLM: the ambiguous band is decided by rule
        },
        run_config=run_config,
    )


def test_materialize_canonical_concepts_with_checks(home, instance, tmp_path):
    register(home, plan_corpora("dana", write_jsonl(tmp_path / "dana.jsonl", jsonl_rows())))
    instance.add_dynamic_partitions(corpus_partitions.name, ["dana"])
    assert _materialize(instance, home, dg.AssetSelection.assets("messages", "segments")).success
    add_mentions(home.corpus("dana"), MENTIONS)  # what the mentions asset writes

    result = _materialize(instance, home, dg.AssetSelection.assets("canonical_concepts"), RUN_CONFIG)
    assert result.success
    meta = report_figures(result.asset_materializations_for_node("canonical_concepts")[0].metadata)
    # the sample's one-phrasing habit stays a residual; the marathon event also supports the goal
    assert meta["mentions_processed"] == 15 and meta["created"] == 6 and meta["attached"] == 4
    assert (
        meta["refined"] == 1
        and meta["rejected"] == 5
        and meta["concepts"] == 6
        and meta["mentions_pending"] == 0
    )
    assert (
        meta["evidence_grounding"] == 1.0
        and meta["coverage"] == 1.0
        and meta["compression"] == round(10 / 6, 3)
    )
    assert meta["embedding_model"] == "hashing-256" and "**garden planner app**" in meta["concept_sample"]
    assert meta["adjudicator"] == meta["router_rules"]["adjudicator"] == "none (rule-only)"
    # Max and the refined tomato beds are active, Flutter (one mention) is weak
    assert "| entity | 2 | 1 | 3 |" in meta["concepts_by_type_and_state"]
    assert "| reject | generic_title | 1 |" in meta["decision_reasons"]
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {
        "evidence_grounding",
        "concept_purity",
        "mentions_accounted",
        "action_log_replays",
    }
    assert all(
        evaluations[name].passed
        for name in ("evidence_grounding", "mentions_accounted", "action_log_replays")
    )
    assert evaluations["concept_purity"].severity == dg.AssetCheckSeverity.WARN
    assert evaluations["evidence_grounding"].severity == dg.AssetCheckSeverity.ERROR

    store = home.corpus("dana")
    with store.staging.connect() as conn:
        before = [
            dict(r)
            for r in conn.execute(
                select(canonical_concepts).order_by(canonical_concepts.c.concept_id)
            ).mappings()
        ]
        actions = conn.execute(select(func.count()).select_from(action_log)).scalar_one()
        run_ids = set(conn.execute(select(action_log.c.run_id)).scalars())
    assert run_ids == {result.run_id}
    again = _materialize(instance, home, dg.AssetSelection.assets("canonical_concepts"), RUN_CONFIG)
    meta = report_figures(again.asset_materializations_for_node("canonical_concepts")[0].metadata)
    assert meta["mentions_processed"] == 0 and meta["concepts"] == 6
    with store.staging.connect() as conn:
        assert [
            dict(r)
            for r in conn.execute(
                select(canonical_concepts).order_by(canonical_concepts.c.concept_id)
            ).mappings()
        ] == before
        assert conn.execute(select(func.count()).select_from(action_log)).scalar_one() == actions


def _logged(instance, result, text: str) -> bool:
    return any(text in (entry.user_message or "") for entry in instance.all_logs(result.run_id))


def test_vectors_are_embedded_ahead_only_for_the_stages_the_run_builds(
    home, instance, tmp_path, monkeypatch
):
    import os

    from sqlalchemy import select as sql_select

    from memory_core.embeddings import EmbeddingCache, HashingEmbedder
    from memory_core.ids import sha256_text
    from memory_core.store.schema import segments

    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # a one-core runner does not prefetch
    register(home, plan_corpora("dana", write_jsonl(tmp_path / "dana.jsonl", jsonl_rows())))
    instance.add_dynamic_partitions(corpus_partitions.name, ["dana"])
    assert _materialize(instance, home, dg.AssetSelection.assets("messages", "segments")).success
    add_mentions(home.corpus("dana"), MENTIONS)
    ahead = "embedded ahead of the stages that use them"

    alone = _materialize(instance, home, dg.AssetSelection.assets("canonical_concepts"), RUN_CONFIG)
    assert alone.success and not _logged(instance, alone, ahead)  # no topics in the run: nothing embedded for it
    with home.corpus("dana").staging.connect() as conn:
        texts = list(conn.execute(sql_select(segments.c.text).where(segments.c.superseded_at.is_(None))).scalars())
    cache, model = EmbeddingCache.for_home(home), HashingEmbedder(EmbeddingsResource(provider="hashing").hashing_dim)
    assert not cache.get_many(model.model_name, [sha256_text(t) for t in texts])

    both = dg.AssetSelection.assets("canonical_concepts", "topics")
    run_config = {"ops": {**RUN_CONFIG["ops"], "topics": {"config": {"n_trials": 4, "min_points": 4}}}}
    result = _materialize(instance, home, both, run_config)
    assert result.success and _logged(instance, result, ahead)
    assert len(cache.get_many(model.model_name, [sha256_text(t) for t in texts])) == len(set(texts))

    from memory_core.vector_index.families import own_text_message_calls

    turns = [t for call in own_text_message_calls(home.corpus("dana")) for t in call]  # turns of a round
    cached_before = len(cache.get_many(model.model_name, [sha256_text(t) for t in turns]))
    assert turns and cached_before < len(set(turns))  # a turn that is a whole segment's text is cached already
    with_indexes = _materialize(instance, home, dg.AssetSelection.assets("canonical_concepts", "indexes"), RUN_CONFIG)
    assert with_indexes.success and _logged(instance, with_indexes, "own-text turn vectors are being embedded")
    assert not _logged(instance, with_indexes, "segment vectors")  # no topics in this run
    assert len(cache.get_many(model.model_name, [sha256_text(t) for t in turns])) == len(set(turns))

    monkeypatch.setattr(os, "cpu_count", lambda: 1)  # one core: the prefetch would only compete with the loop
    again = _materialize(instance, home, both, run_config)
    assert again.success and not _logged(instance, again, ahead)


def test_a_build_embeds_ahead_from_its_extraction_step_once(home, instance, tmp_path, monkeypatch):
    """With extraction in the run, the prefetch starts there (beside the teacher), not again in the loop."""
    import os

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    register(home, plan_corpora("dana", write_jsonl(tmp_path / "dana.jsonl", jsonl_rows())))
    instance.add_dynamic_partitions(corpus_partitions.name, ["dana"])
    build = dg.AssetSelection.assets(
        "messages", "segments", "mentions", "user_reactions", "canonical_concepts", "topics"
    )
    run_config = {"ops": {**RUN_CONFIG["ops"], "topics": {"config": {"n_trials": 4, "min_points": 4}}}}
    result = _materialize(instance, home, build, run_config)
    assert result.success
    steps = [
        entry.step_key
        for entry in instance.all_logs(result.run_id)
        if "embedded ahead of the stages that use them" in (entry.user_message or "")
    ]
    assert steps == ["extraction"]


def test_umap_is_imported_ahead_only_for_a_run_whose_topics_fit_umap():
    from types import SimpleNamespace

    from memory_assets.prefetch import _reduces_with_umap

    def run(config=None):
        return SimpleNamespace(run_config={"ops": {"topics": {"config": config}}} if config else {})

    assert _reduces_with_umap(run(), 759) and not _reduces_with_umap(run(), 149)  # auto: PCA below 150
    assert not _reduces_with_umap(run({"reduction": "pca"}), 759)
    assert _reduces_with_umap(run({"reduction": "umap"}), 40) and not _reduces_with_umap(run({"reduction": "umap"}), 5)
    assert _reduces_with_umap(run({"umap_min_points": 20}), 40)
    assert not _reduces_with_umap(run({"reduction": "nonsense"}), 759)

"""One current extraction per segment: a corpus whose teacher is switched ends with the mentions and the
concepts a build with the new teacher alone gives (not the union of both teachers'), its ActionLog still
replays, and switching back works the same way."""

from __future__ import annotations

from sqlalchemy import select

from memory_assets.runner import CorpusRunner
from memory_core.corpora import plan_corpora
from memory_core.demo import demo_export_path
from memory_core.store.schema import canonical_concepts, mentions, segment_extractions
from memory_resources.embeddings import EmbeddingsResource
from memory_resources.llm import LLMResource

BUILD = ["messages", "segments", "mentions", "user_reactions", "canonical_concepts"]
CHECKS = ("action_log_replays", "mentions_accounted", "evidence_grounding")


def _runner(home, instance, server=None) -> CorpusRunner:
    resources = {"embeddings": EmbeddingsResource(provider="hashing", hashing_dim=64)}
    if server is not None:
        resources["llm"] = LLMResource(teacher="openai", api_key="sk-test-switch-0001", base_url=server.url)
    else:
        resources["llm"] = LLMResource(teacher="offline")
    return CorpusRunner(home, instance, resources=resources)


def _state(store) -> tuple[set, set, set]:
    with store.staging.connect() as conn:
        extractors = set(conn.execute(select(mentions.c.extractor)).scalars())
        answered = set(conn.execute(select(segment_extractions.c.extractor)).scalars())
        live = {
            (r.type, r.title)
            for r in conn.execute(
                select(canonical_concepts.c.type, canonical_concepts.c.title).where(
                    canonical_concepts.c.state.in_(("active", "weak"))
                )
            )
        }
    return extractors, answered, live


def _build(runner, name) -> None:
    run = runner.materialize(name, BUILD)
    assert run.success
    checks = {e.check_name: e.passed for e in run.result.get_asset_check_evaluations()}
    assert all(checks[c] for c in CHECKS), checks


def test_switching_teachers_leaves_one_extraction_per_segment(home, instance, chat_server):
    offline, llm = _runner(home, instance), _runner(home, instance, chat_server)
    for name in ("fresh", "switched"):
        offline.register(plan_corpora(name, demo_export_path()))
    _build(llm, "fresh")  # the new teacher alone
    _build(offline, "switched")
    first = _state(home.corpus("switched"))
    _build(llm, "switched")  # the teacher changes

    fresh, switched = _state(home.corpus("fresh")), _state(home.corpus("switched"))
    assert switched == fresh  # the same mentions' extractor, segment answers and live concepts
    assert switched[0] == {"llm:gpt-4o-mini/extraction/v3"} and first[0] != switched[0]
    assert first[2] != fresh[2]  # the offline teacher's concepts really were different ones

    _build(offline, "switched")  # and back: the offline teacher's build again, nothing in its way
    assert _state(home.corpus("switched")) == first

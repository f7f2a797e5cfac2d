"""Layer 2: the topics, weighted_links and domains stages against a real corpus store (hashing embedder)."""

from __future__ import annotations

import json
from datetime import datetime

import numpy as np
import pytest
from sqlalchemy import delete, func, insert, select, update

from memory_core.embeddings import HashingEmbedder
from memory_core.errors import MemoryOSError
from memory_core.ids import sha256_json, stable_uuid
from memory_core.llm.base import LLMClient, StructuredRequest, StructuredResult
from memory_core.store.db import utcnow
from memory_core.store.schema import (
    anchor_entities,
    domains,
    llm_calls,
    residuals,
    segments,
    topic_builds,
    topic_concept_links,
    topic_segments,
    topics,
    user_reactions,
)
from memory_core.topics.describe import Describer, LLMDescriber
from memory_core.topics.domains import DomainsConfig, build_domains
from memory_core.topics.links import LinkConfig, build_links
from memory_core.topics.prompts import PROMPTS, GroupDescription
from memory_core.topics.stage import TopicsConfig, build_topics
from memory_core.topics.topic_map import ranked_clusters, render_topic_map, topic_legend
from memory_core.topics.tuner import TunerConfig
from tests.conftest import RecordingEmbedder
from tests.topic_samples import SUBJECTS, add_subject_concepts, build_subject_corpus

EMBEDDER = HashingEmbedder(256)
CONFIG = TopicsConfig(tuner=TunerConfig(n_trials=8, min_points=12))


def _rows(store, table, order):
    with store.staging.connect() as conn:
        return [dict(r) for r in conn.execute(select(table).order_by(*order)).mappings()]


def _snapshot(store):
    strip = lambda rows: [{k: v for k, v in r.items() if k != "recorded_at"} for r in rows]  # noqa: E731
    return (
        strip(_rows(store, topics, [topics.c.topic_id])),
        _rows(store, topic_segments, [topic_segments.c.segment_id]),
    )


@pytest.fixture
def store(home, tmp_path):
    return build_subject_corpus(home, tmp_path)


def test_topics_follow_the_subjects(store):
    report = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    f = report.figures
    assert (
        report.status == "built" and f["segments"] == 48 and f["path"] == "tuned" and f["reduction"] == "pca"
    )
    assert f["topics"] == 4 and f["noise_ratio"] < 0.2 and f["silhouette"] > 0.1
    assert len(report.trials) == 8 and f["trials_run"] == 8 and not f["truncated"]
    topic_rows = _rows(store, topics, [topics.c.topic_id])
    members = {}
    with store.staging.connect() as conn:
        for seg_id, text, topic_id in conn.execute(
            select(segments.c.segment_id, segments.c.text, topic_segments.c.topic_id).join(
                topic_segments, topic_segments.c.segment_id == segments.c.segment_id
            )
        ):
            if topic_id:
                subject = next(s for s, words in SUBJECTS.items() if any(w in text.lower() for w in words))
                members.setdefault(topic_id, set()).add(subject)
                members.setdefault((topic_id, "ids"), []).append(seg_id)
    for row in topic_rows:
        assert len(members[row["topic_id"]]) == 1  # one subject per topic
        (subject,) = members[row["topic_id"]]
        assert any(w in row["label"] for w in SUBJECTS[subject]), row["label"]  # c-TF-IDF names it
        assert row["topic_id"] == stable_uuid("topic", sha256_json(sorted(members[(row["topic_id"], "ids")])))
        assert len(row["centroid"]) == 256 and abs(np.linalg.norm(row["centroid"]) - 1) < 1e-4
        assert 0.0 <= row["label_centroid_distance"] <= 2.0 and row["label_source"] == "c-tf-idf"
        assert (
            row["size"] == len(members[(row["topic_id"], "ids")])
            and len(row["representative_segment_ids"]) == 3
        )
        assert row["first_seen"] <= row["last_seen"] and row["conversation_count"] == 1
    segment_rows = _rows(store, topic_segments, [topic_segments.c.segment_id])
    assert len(segment_rows) == 48
    for r in segment_rows:  # noise keeps a way back into the topic layer
        assert (r["topic_id"] is None) == (r["nearest_topic_id"] is not None)
        assert r["centroid_similarity"] is not None and r["outlier_score"] is not None
    with store.staging.connect() as conn:
        build = conn.execute(select(topic_builds)).mappings().one()
    assert build["stage"] == "topics" and build["run_id"] == "r1" and len(build["trials"]) == 8
    assert report.map is not None and report.map.coords.shape == (48, 2)


def test_rerun_reuses_the_build_and_a_forced_rebuild_is_identical(store):
    first = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    before = _snapshot(store)
    again = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r2")
    assert again.status == "unchanged" and again.figures == json.loads(json.dumps(first.figures, default=str))
    assert _snapshot(store) == before
    forced = build_topics(store, EMBEDDER, TopicsConfig(tuner=CONFIG.tuner, force=True), Describer(), "r3")
    assert forced.status == "built" and _snapshot(store) == before  # determinism: same input, same topics
    other = build_topics(
        store, EMBEDDER, TopicsConfig(tuner=TunerConfig(n_trials=8, seed=1)), Describer(), "r4"
    )
    assert other.status == "built"  # a configuration change rebuilds
    with store.staging.connect() as conn:
        assert conn.execute(select(func.count()).select_from(topic_builds)).scalar_one() == 3


def test_small_and_empty_corpora(home, tmp_path):
    small = build_subject_corpus(home, tmp_path, "small", rounds_per_subject=2)  # 8 segments < min_points
    report = build_topics(small, EMBEDDER, CONFIG, Describer(), run_id="r")
    assert report.figures["path"] == "single" and report.figures["topics"] == 1
    assert report.figures["noise_ratio"] == 0.0 and report.figures["silhouette"] is None
    (row,) = _rows(small, topics, [topics.c.topic_id])
    assert row["size"] == 8 and row["silhouette"] is None and row["label"] != ""
    empty = home.corpus("nothing")
    report = build_topics(empty, EMBEDDER, CONFIG, Describer(), run_id="r")
    assert report.status == "empty" and report.figures["topics"] == 0
    assert _rows(empty, topics, [topics.c.topic_id]) == []


def test_links_and_domains_build_the_hierarchy(store):
    concept_of = add_subject_concepts(store)
    build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    links = build_links(store, EMBEDDER, LinkConfig(top_k=3), run_id="r1")
    f = links.figures
    assert f["topics"] == 4 and f["concepts"] == 8 and 0 < f["links"] <= 12 and f["topics_unlinked"] == 0
    rows = _rows(store, topic_concept_links, [topic_concept_links.c.topic_id])
    assert all(20 < r["weight"] <= 100 for r in rows)
    top = {}
    for r in sorted(rows, key=lambda r: -r["weight"]):
        top.setdefault(r["topic_id"], r["concept_id"])
    topic_subject = {
        t["topic_id"]: next(s for s, w in SUBJECTS.items() if any(x in t["label"] for x in w))
        for t in _rows(store, topics, [topics.c.topic_id])
    }
    # each topic's strongest link is a concept of its own subject (its entity or its belief)
    for tid, cid in top.items():
        assert cid in {concept_of[topic_subject[tid]], stable_uuid("concept", topic_subject[tid], "belief")}
    report = build_domains(store, EMBEDDER, DomainsConfig(), Describer(), run_id="r1")
    d = report.figures
    assert report.status == "built" and d["topics"] == 4 and d["domains"] >= 1
    topic_rows = _rows(store, topics, [topics.c.topic_id])
    anchors = {a["anchor_id"]: a for a in _rows(store, anchor_entities, [anchor_entities.c.anchor_id])}
    domain_ids = {x["domain_id"] for x in _rows(store, domains, [domains.c.domain_id])}
    for t in topic_rows:
        anchor = anchors[t["anchor_id"]]
        assert t["domain_id"] in domain_ids and anchor["domain_id"] == t["domain_id"]
        # every subject's entity has evidence in all its segments: it anchors that subject's topic
        assert anchor["concept_id"] == concept_of[topic_subject[t["topic_id"]]], anchor
    assert build_domains(store, EMBEDDER, DomainsConfig(), Describer(), run_id="r2").status == "unchanged"
    with pytest.raises(MemoryOSError, match="materialise `topics` with this model first"):
        build_links(store, HashingEmbedder(64), LinkConfig(), run_id="r3")  # centroids of another model


def test_reactions_are_linked_during_their_topic(store):
    with store.staging.connect() as conn:
        seg_id, message_ids, conv = conn.execute(
            select(segments.c.segment_id, segments.c.message_ids, segments.c.conversation_id).limit(1)
        ).one()
    now = datetime(2024, 3, 1)
    with store.reflective.begin() as conn:
        conn.execute(
            insert(user_reactions),
            [
                dict(
                    reaction_id="r1",
                    message_id=message_ids[0],
                    segment_id=seg_id,
                    conversation_id=conv,
                    state="Joy",
                    state_raw="",
                    intensity=0.5,
                    valence="positive",
                    epistemic_status="explicit",
                    evidence_text="x",
                    span_start=0,
                    span_end=1,
                    topic_id=None,
                    occurred_at=now,
                    extractor="t",
                    recorded_at=now,
                    expires_at=None,
                )
            ],
        )
    report = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    assert report.reactions_linked == 1
    with store.staging.connect() as conn:
        ts = (
            conn.execute(select(topic_segments).where(topic_segments.c.segment_id == seg_id)).mappings().one()
        )
    with store.reflective.connect() as conn:
        linked = conn.execute(select(user_reactions.c.topic_id)).scalar_one()
    assert linked == (ts["topic_id"] or ts["nearest_topic_id"]) and linked is not None


class _ScriptedClient(LLMClient):
    """Answers describe prompts: a good label, except for inputs mentioning `fail_word`."""

    model = "scripted-1"

    def __init__(self, fail_word: str):
        self.fail_word = fail_word
        self.requests: list[StructuredRequest] = []

    def structured(self, request):
        self.requests.append(request)
        common = dict(model=self.model, raw="", cache_key=request.cache_key(self.model))
        if self.fail_word in request.user:
            return StructuredResult(outcome="invalid", parsed=None, error="label: missing", **common)
        keywords = request.user.split("Distinctive terms: ", 1)[1].split("\n", 1)[0]
        parsed = GroupDescription(label=f"About {keywords.split(', ')[0]}", profile=f"Talk about {keywords}.")
        return StructuredResult(outcome="ok", parsed=parsed, tokens_in=50, tokens_out=10, **common)


def test_llm_describer_labels_topics_and_keeps_offline_labels_on_failure(store):
    for prompt in PROMPTS:  # strict wire schemas, as every prompt must have
        assert StructuredRequest(prompt.prompt_id, prompt.system, "x", prompt.response_model).schema
    client = _ScriptedClient(fail_word="guitar")
    report = build_topics(store, EMBEDDER, CONFIG, LLMDescriber(client), run_id="r1")
    assert report.figures["llm_calls"] == 4 and report.figures["describe_failures"] == 1
    rows = _rows(store, topics, [topics.c.topic_id])
    sources = sorted(r["label_source"] for r in rows)
    assert sources == ["c-tf-idf"] + ["llm:scripted-1/topics/describe/v1"] * 3
    assert all(r["label"].startswith("About ") for r in rows if r["label_source"] != "c-tf-idf")
    assert all("<excerpt" in q.user for q in client.requests)
    with store.staging.connect() as conn:
        assert conn.execute(select(func.count()).where(llm_calls.c.stage == "topics")).scalar_one() == 4
        (residual,) = conn.execute(select(residuals).where(residuals.c.stage == "topics")).mappings().all()
    assert residual["reason_code"] == "describe_invalid" and "kept the c-TF-IDF label" in residual["reason"]
    # the describer is part of the build's identity: switching back to offline rebuilds
    assert build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r2").status == "built"


def test_topic_map_picture(store, tmp_path):
    report = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    path = tmp_path / "map.png"
    png = render_topic_map(report.map, "subjects", path)
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and path.read_bytes() == png
    assert 5000 < len(png) < 100_000  # inline in the catalog as base64: it stays small

    # the legend table lists what the picture numbers, in its order, then the noise
    labels = report.map.labels
    sizes = np.bincount(labels[labels >= 0], minlength=len(report.map.names))
    numbered = [(report.map.names[c], int(sizes[c])) for c in ranked_clusters(sizes, report.map.names)]
    legend = topic_legend(store)
    assert [(r["label"], r["segments"]) for r in legend[: len(numbered)]] == numbered
    assert [r["number"] for r in legend[: len(numbered)]] == list(range(1, len(numbered) + 1))
    assert sum(r["segments"] for r in legend) == len(labels)
    assert legend[-1]["label"] == "noise" if (labels < 0).any() else legend[-1]["label"] != "noise"
    assert {r["domain"] for r in legend} == {"—"}  # no domains built yet


def test_segments_already_clustered_are_not_embedded_ahead(store):
    """What a run's prefetch asks (memory_assets/prefetch.py): the segments the last build clustered, with
    this model, need no vectors ahead: the stage reuses its build (a changed arithmetic's empty cache aside)."""
    from memory_core.topics.stage import clustered_unchanged

    assert not clustered_unchanged(store, EMBEDDER.model_name)  # never clustered
    build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    assert clustered_unchanged(store, EMBEDDER.model_name)
    assert not clustered_unchanged(store, "another-model")
    with store.staging.begin() as conn:  # a re-cut retires a segment
        first = conn.execute(select(segments.c.segment_id).order_by(segments.c.segment_id).limit(1)).scalar_one()
        conn.execute(update(segments).where(segments.c.segment_id == first).values(superseded_at=utcnow()))
    assert not clustered_unchanged(store, EMBEDDER.model_name)
    assert build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r2").status == "built"
    assert clustered_unchanged(store, EMBEDDER.model_name)


def test_a_new_conversation_rebuilds_and_retires_stale_links(store):
    add_subject_concepts(store)
    build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    build_links(store, EMBEDDER, LinkConfig(), run_id="r1")
    with store.staging.begin() as conn:  # a segment disappears (as a re-cut would retire it)
        first = conn.execute(
            select(segments.c.segment_id).order_by(segments.c.segment_id).limit(1)
        ).scalar_one()
        conn.execute(delete(segments).where(segments.c.segment_id == first))
    report = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r2")
    assert report.status == "built" and report.figures["segments"] == 47
    with store.staging.connect() as conn:
        live = set(conn.execute(select(topics.c.topic_id)).scalars())
        linked = set(conn.execute(select(topic_concept_links.c.topic_id)).scalars())
    assert linked <= live


def test_topic_layer_reports_and_contracts(store):
    from sqlalchemy import update

    from memory_core.topics import checks as contracts

    add_subject_concepts(store)
    built = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r1")
    links = build_links(store, EMBEDDER, LinkConfig(top_k=3), run_id="r1")
    grouped = build_domains(store, EMBEDDER, DomainsConfig(), Describer(), run_id="r1")
    for report in (built, links, grouped):
        meta = report.as_metadata()
        assert json.loads(json.dumps(meta)) == meta  # plain JSON-able values
    t = built.as_metadata()
    assert t["status"] == "built" and t["describer"] == "c-tf-idf" and t["topics"] == 4
    assert t["trial_history"] == built.trials and t["seconds"] > 0
    again = build_topics(store, EMBEDDER, CONFIG, Describer(), run_id="r2").as_metadata()
    assert again["status"] == "unchanged" and again["build_seconds"] == t["build_seconds"]
    assert links.as_metadata()["links"] == len(
        _rows(store, topic_concept_links, [topic_concept_links.c.topic_id])
    )
    d = grouped.as_metadata()
    assert d["domains"] == len(d["domain_sizes"]) and "domain_table" not in d and d["domains_table"]

    bounds = contracts.TopicQualityBounds()
    results = [
        contracts.topic_silhouette_in_bounds(store, bounds),
        contracts.topic_noise_in_bounds(store, bounds),
        contracts.segments_in_one_topic(store),
        contracts.link_weights_in_range(store),
        contracts.topics_in_hierarchy(store),
    ]
    assert all(r.passed for r in results), [r.figures for r in results]
    strict = contracts.TopicQualityBounds(silhouette_min=0.99, noise_ratio_max=-1.0)
    assert not contracts.topic_silhouette_in_bounds(store, strict).passed
    assert not contracts.topic_noise_in_bounds(store, strict).passed

    with store.staging.begin() as conn:
        first = conn.execute(select(topics.c.topic_id).order_by(topics.c.topic_id)).scalars().first()
        conn.execute(update(topics).where(topics.c.topic_id == first).values(size=topics.c.size + 1))
        conn.execute(
            update(topic_concept_links).where(topic_concept_links.c.topic_id == first).values(weight=150.0)
        )
        conn.execute(update(domains).values(size=domains.c.size + 1))
    sizes = contracts.segments_in_one_topic(store)
    assert (
        not sizes.passed
        and sizes.figures["topics_with_wrong_size"] == 1
        and sizes.figures["examples"] == [first]
    )
    weights = contracts.link_weights_in_range(store)
    assert not weights.passed and weights.figures["weights_out_of_range"] >= 1
    hierarchy = contracts.topics_in_hierarchy(store)
    assert (
        not hierarchy.passed and hierarchy.figures["domains_with_wrong_size"] == hierarchy.figures["domains"]
    )


def test_segment_vectors_embedded_ahead_are_the_stage_s_chunks_last_first_and_the_stage_embeds_none(
    store, home
):
    from memory_core.embeddings import CachedEmbedder, EmbeddingCache
    from memory_core.embeddings.prefetch import EmbeddingPrefetch
    from memory_core.topics.prefetch import segment_vector_calls
    from memory_core.topics.stage import load_segments

    texts = [s.text for s in load_segments(store)]
    ahead = RecordingEmbedder(256)
    calls = segment_vector_calls(store, batch=16)
    prefetch = EmbeddingPrefetch(CachedEmbedder(ahead, EmbeddingCache.for_home(home)), calls).start()
    prefetch.join(timeout=60)
    by_length = sorted(texts, key=len)  # the stage's calls hold texts of one length (little padding)
    chunks = [by_length[i : i + 16] for i in range(0, len(texts), 16)]
    assert len(chunks) == 3 and prefetch.error is None and prefetch.done == 3
    assert ahead.calls == chunks[::-1]  # the stage's own calls, last first: the two meet in the middle

    stage = RecordingEmbedder(256)
    report = build_topics(
        store, CachedEmbedder(stage, EmbeddingCache.for_home(home)), CONFIG, Describer(), run_id="r1"
    )
    assert report.status == "built" and report.figures["segments"] == len(texts)
    assert not set(texts) & {t for call in stage.calls for t in call}  # every segment vector was cached
    alone = build_topics(store, EMBEDDER, TopicsConfig(tuner=CONFIG.tuner, force=True), Describer(), "r2")
    assert alone.figures["topics"] == report.figures["topics"]
    assert alone.figures["silhouette"] == report.figures["silhouette"]


def test_a_stopped_prefetch_ends_between_chunks_and_a_failing_one_records_why(store, home):
    from memory_core.embeddings.prefetch import EmbeddingPrefetch

    class Failing(HashingEmbedder):
        def embed(self, texts):
            raise OSError("disk full")

    failed = EmbeddingPrefetch(Failing(256), [["a"], ["b"]]).start()
    failed.join(timeout=10)
    assert failed.error == "OSError: disk full" and failed.done == 0 and not failed.running()

    import threading

    release, entered = threading.Event(), threading.Event()

    class Slow(RecordingEmbedder):
        def embed(self, texts):
            entered.set()
            release.wait(10)  # the first chunk is in flight when the run ends
            return super().embed(texts)

    slow = Slow(256)
    stopping = EmbeddingPrefetch(slow, [["a"], ["b"], ["c"]]).start()
    assert entered.wait(10)
    stopping.stop(timeout=0)  # the process ends while the first chunk is in flight
    release.set()
    stopping.join(timeout=10)  # the chunk in flight ends, no other starts
    assert slow.calls == [["a"]] and stopping.done == 1 and not stopping.running()  # calls go in order
    assert stopping.calls == ()  # nothing kept once it ended

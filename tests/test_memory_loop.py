"""Layer 2: the memory loop's domain logic on a small real corpus (authored mentions, hashing embeddings)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from datetime import datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import event as sqlalchemy_event
from sqlalchemy import func, select, text, update

from memory_core.concepts import LIVE_STATES, ConceptHypothesis, EvidenceSpan, metrics
from memory_core.concepts import action_log as log
from memory_core.concepts.patches import apply_patch
from memory_core.concepts.store import concept_to_row, read_concepts, update_concepts
from memory_core.embeddings import CachedEmbedder, EmbeddingCache, HashingEmbedder
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.retriever import ConceptIndex, RetrievalHit, RetrieverWeights
from memory_core.memory_loop.router import ConceptView, Router, RouterRules
from memory_core.store.db import MemoryHome
from memory_core.store.schema import (
    action_log,
    canonical_concepts,
    concept_evidence,
    mentions,
    messages,
    residuals,
)
from tests.loop_samples import MENTIONS, add_mentions, build_corpus, concept, mention

# the hashing embedder's cosines run lower than a sentence model's: a shared name needs less agreement
HASHING = LoopConfig(rules=RouterRules(alias_attach_similarity=0.3, fact_alias_similarity=0.3), batch_size=4)
T0 = datetime(2024, 1, 5, 9, 0)


def cand(title="Max", type_="entity", description="Dana's dog", confidence=0.8, **kw) -> Candidate:
    base = dict(
        mention_id="m-1",
        segment_id="s-1",
        message_id="msg-1",
        conversation_id="c-1",
        span_start=0,
        span_end=len(title),
        surface=title,
        title=title,
        type=type_,
        description=description,
        aliases=(),
        relations=(),
        confidence=confidence,
        extractor="t",
        message_created_at=T0,
    )
    base.update(kw)
    return Candidate(**base)


def view(
    cid="k1", type_="entity", state="active", best=0.8, description="Dana's dog", holds_span=False
) -> ConceptView:
    return ConceptView(concept(cid, "Max", type_, description, state), best, holds_span)


def hit(cid="k1", score=0.9, similarity=0.9, lexical=0.0) -> RetrievalHit:
    return RetrievalHit(cid, score, similarity, lexical, 0.0, 1.0)


# ------------------------------------------------------------------------------------------------ router
def test_router_screens_bad_candidates():
    router = Router()
    good = cand()
    assert router.screen(good, "Max", True) is None
    assert router.screen(good, None, True).reason_code == "message_missing"
    assert router.screen(good, "Mux", True).reason_code == "span_unverified"
    assert router.screen(good, "Max", False).reason_code == "segment_superseded"
    assert router.screen(cand(type_="emotion"), "Max", True).reason_code == "unknown_type"
    assert router.screen(cand(confidence=0.1), "Max", True).reason_code == "low_confidence"
    assert (
        router.screen(cand(title="it", surface="it", span_end=2), "it", True).reason_code == "generic_title"
    )
    assert router.screen(cand(title="x", surface="x", span_end=1), "x", True).reason_code == "empty_title"
    long_title = "I think that we should really go and see the lake this summer"
    assert router.screen(cand(title=long_title, surface="Max"), "Max", True).reason_code == "sentence_title"


def test_router_decisions_follow_the_rules():
    rules = RouterRules(
        attach_score=0.78, min_attach_similarity=0.72, alias_attach_similarity=0.55, ambiguous_score=0.62
    )
    router = Router(rules)
    assert router.route(cand(), [], {}).reason_code == "no_match"
    # strong match → attach
    d = router.route(cand(), [hit(score=0.8, similarity=0.75)], {"k1": view()})
    assert (d.action, d.concept_id, d.reason_code) == ("attach", "k1", "match")
    assert d.scores["best"]["similarity"] == 0.75
    # high fused score but cosine under the floor → not a match
    assert router.route(cand(), [hit(score=0.8, similarity=0.6)], {"k1": view()}).action == "create"
    # shared name with moderate agreement → attach; same name, disagreeing description → ambiguous → create
    assert (
        router.route(cand(), [hit(score=0.6, similarity=0.56, lexical=1.0)], {"k1": view()}).action
        == "attach"
    )
    d = router.route(cand(), [hit(score=0.65, similarity=0.5, lexical=1.0)], {"k1": view()})
    assert (d.action, d.reason_code) == ("create", "ambiguous_create")
    # incompatible type is skipped, a compatible one further down is used
    views = {"k1": view(type_="event"), "k2": view("k2", type_="entity")}
    d = router.route(cand(), [hit("k1", 0.95, 0.95), hit("k2", 0.8, 0.8)], views)
    assert (d.action, d.concept_id) == ("attach", "k2")
    assert (
        router.route(cand(type_="goal"), [hit("k1", 0.95, 0.95)], {"k1": view(type_="event")}).reason_code
        == "no_match"
    )
    # project|entity is a listed compatible pair
    assert router.route(cand(type_="project"), [hit()], {"k1": view(type_="entity")}).action == "attach"
    # weak concept, more confident candidate with a new description → refine; otherwise attach
    assert (
        router.route(
            cand(confidence=0.9), [hit()], {"k1": view(state="weak", best=0.4, description="a dog")}
        ).action
        == "refine"
    )
    assert (
        router.route(
            cand(confidence=0.42), [hit()], {"k1": view(state="weak", best=0.4, description="a dog")}
        ).action
        == "attach"
    )
    assert (
        router.route(
            cand(confidence=0.9), [hit()], {"k1": view(state="active", best=0.4, description="a dog")}
        ).action
        == "attach"
    )
    # the exact span is already evidence of the concept → attach without new evidence
    d = router.route(cand(), [hit()], {"k1": view(holds_span=True)})
    assert (d.action, d.reason_code, d.duplicate_span) == ("attach", "duplicate_span", True)


# ------------------------------------------------------------------------------------------------ retriever
def _unit(*xs) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_retriever_fuses_signals_and_keeps_components():
    w = RetrieverWeights(
        similarity=0.6, lexical=0.2, graph=0.1, temporal=0.1, top_k=3, shortlist=1, temporal_scale_days=10
    )
    index = ConceptIndex(weights=w, capacity=1)
    assert index.retrieve(_unit(1, 0, 0), ["max"], T0, "s", "c") == []
    assert index.max_similarity(np.zeros((1, 3))).tolist() == [0.0]
    index.add("dog", _unit(1, 0, 0), "entity", ["Max", "the dog"], T0, T0)
    index.add("app", _unit(0, 1, 0), "project", ["garden planner app"], T0, T0 + timedelta(days=30))
    index.add("far", _unit(0, 0, 1), "entity", ["Berlin"], T0 - timedelta(days=100), T0 - timedelta(days=100))
    assert len(index) == 3 and index.matrix.shape == (3, 3)  # grew past its initial capacity
    index.touch("app", T0, "seg-1", "conv-1")
    hits = index.retrieve(_unit(1, 0.1, 0), ["garden app"], T0 + timedelta(days=5), "seg-1", "conv-1")
    by_id = {h.concept_id: h for h in hits}
    # shortlist=1 holds only the nearest by cosine ("dog"); "app" competes through the shared segment
    assert set(by_id) == {"dog", "app"}
    app = by_id["app"]
    assert app.graph == 1.0 and app.temporal == 1.0 and app.lexical == pytest.approx(2 / 3)
    assert app.score == pytest.approx(0.6 * app.similarity + 0.2 * (2 / 3) + 0.1 + 0.1)
    dog = by_id["dog"]
    assert dog.graph == 0.0 and dog.temporal == pytest.approx(np.exp(-0.5)) and dog.lexical == 0.0
    assert hits == sorted(hits, key=lambda h: -h.score)
    # an exact alias brings a concept in however far it is in embedding space
    hits = index.retrieve(_unit(1, 0, 0), ["berlin"], T0, "seg-9", "conv-9")
    berlin = next(h for h in hits if h.concept_id == "far")
    assert berlin.lexical == 1.0 and berlin.similarity == 0.0
    assert set(hits[0].components()) == {"concept_id", "score", "similarity", "lexical", "graph", "temporal"}
    index.set_names("far", ["Berlin marathon"])
    assert "far" not in {h.concept_id for h in index.retrieve(_unit(1, 0, 0), ["berlin"], T0, "s", "c")}
    assert index.max_similarity(np.stack([_unit(0, 0, 1), _unit(1, 1, 0)])) == pytest.approx(
        [1.0, 0.7071], abs=1e-4
    )


def test_batched_similarities_match_per_candidate_ones():
    rng = np.random.default_rng(7)

    def unit(m):
        return (m / np.linalg.norm(m, axis=1, keepdims=True)).astype(np.float32)

    index = ConceptIndex(capacity=4)
    concepts = unit(rng.normal(size=(40, 16)))
    for i, v in enumerate(concepts[:30]):
        index.add(f"c{i}", v, "entity", [f"name {i}"], T0, T0)
    queries = unit(rng.normal(size=(5, 16)))
    presims = index.batch_similarities(queries)
    # the batch evolves after the snapshot: new concepts, a refined (re-embedded) one
    for i, v in enumerate(concepts[30:]):
        index.add(f"c{30 + i}", v, "entity", [f"name {30 + i}"], T0, T0)
    index.set_vector("c3", queries[2])
    for q, row in zip(queries, presims, strict=True):
        args = (q, ["name 1"], T0, "s", "c")
        batched = [h.components() for h in index.retrieve(*args, presims=row)]
        assert batched == [h.components() for h in index.retrieve(*args)]
    assert index.retrieve(queries[2], [], T0, "s", "c", presims=presims[2])[0].concept_id == "c3"


# ------------------------------------------------------------------------------------------------ the loop
@pytest.fixture
def corpus(home, tmp_path):
    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    return store


def _embedder(home):
    return CachedEmbedder(HashingEmbedder(), EmbeddingCache.for_home(home))


def _concepts(store) -> list[dict]:
    with store.staging.connect() as conn:
        return [
            dict(r)
            for r in conn.execute(
                select(canonical_concepts).order_by(canonical_concepts.c.concept_id)
            ).mappings()
        ]


def _evidence(store) -> list[tuple]:
    with store.staging.connect() as conn:
        return sorted(tuple(r) for r in conn.execute(select(concept_evidence)))


def test_consolidate_routes_every_mention(corpus, home):
    report = consolidate(corpus, _embedder(home), HASHING, run_id="run-1")
    assert report.processed == len(MENTIONS) == 15
    # the habit is one phrasing with no episodes elsewhere: held to the run's end, then a residual; the event
    # "signed up for the Berlin marathon" is an instance of the goal and supports it as evidence
    assert dict(report.actions) == {"create": 6, "attach": 4, "refine": 1, "reject": 5, "relate": 1}
    assert dict(report.reject_reasons) == {
        "generic_title": 1,
        "low_confidence": 1,
        "span_unverified": 1,
        "unknown_type": 1,
        "reflective_unsupported": 1,
    }
    assert report.reasons["instance_of"] == 1 and dict(report.patterns) == {"residual": 1}
    concepts = {(c["title"], c["type"]): c for c in _concepts(corpus)}
    assert len(concepts) == 6
    app = concepts[("garden planner app", "project")]
    assert app["support_count"] == 3 and app["state"] == "active" and "garden app" in app["aliases"]
    assert (app["first_seen"], app["last_seen"]) == (datetime(2024, 1, 5, 9, 0), datetime(2024, 2, 10, 18, 0))
    assert [s["text"] for s in app["evidence_spans"]] == ["garden planner app"] * 3
    beds = concepts[
        ("tomato beds", "entity")
    ]  # created weak from a vague mention, refined by a confident one
    assert beds["revision_count"] == 1 and beds["state"] == "active" and "compost" in beds["description"]
    goal = concepts[("Dana signed up for the Berlin marathon", "goal")]
    event = concepts[("Dana signed up for the Berlin marathon", "event")]
    assert goal["description"].startswith("Dana signed up for the Berlin marathon in September 2024")
    assert goal["concept_id"] != event["concept_id"]
    assert goal["support_count"] == 2 and goal["description"].endswith(
        "Instances: Dana signed up for the Berlin marathon."
    )
    assert event["evidence_spans"][0] in goal["evidence_spans"]  # one span, evidence of both
    assert concepts[("Flutter", "entity")]["state"] == "weak"
    max_dog = concepts[("Max", "entity")]
    assert max_dog["relations"] == [
        {"target_id": beds["concept_id"], "relation": "conflicts_with", "confidence": 0.6}
    ]
    with corpus.staging.connect() as conn:
        refine = conn.execute(select(action_log).where(action_log.c.action == "refine")).mappings().one()
        linked = conn.execute(
            select(func.count()).where(mentions.c.consolidated_id.is_not(None))
        ).scalar_one()
        res = conn.execute(select(residuals.c.reason_code, residuals.c.mention_id)).all()
        ev = conn.execute(select(func.count()).select_from(concept_evidence)).scalar_one()
    assert refine["prior_state"]["description"] == "beds" and refine["new_state"]["revision_count"] == 1
    assert (
        refine["cited_message_ids"]
        and refine["run_id"] == "run-1"
        and refine["scores"]["best"]["lexical"] == 1.0
    )
    assert linked == 10 and len(res) == 5 and all(m for _, m in res) and ev == 11
    assert report.residual_novelty and all(0.0 <= x <= 1.0 for x in report.residual_novelty)


def test_rerun_adds_nothing_and_new_mentions_are_incremental(corpus, home):
    embedder = _embedder(home)
    consolidate(corpus, embedder, HASHING)
    before = _concepts(corpus)
    with corpus.staging.connect() as conn:
        actions = conn.execute(select(func.count()).select_from(action_log)).scalar_one()
    again = consolidate(corpus, embedder, HASHING)
    assert again.pending == 0 and sum(again.actions.values()) == 0
    assert _concepts(corpus) == before
    with corpus.staging.connect() as conn:
        assert conn.execute(select(func.count()).select_from(action_log)).scalar_one() == actions
    computed = embedder.stats.computed
    add_mentions(
        corpus,
        [
            mention(
                "m10",
                "marathon prep",
                "Dana signed up for the Berlin marathon",
                "goal",
                "Dana is preparing for the Berlin marathon in September 2024.",
                0.8,
            )
        ],
    )
    third = consolidate(corpus, embedder, HASHING)
    # the new mention, and the habit held back as a residual judged again (still without episodes)
    assert third.pending == third.processed == 2 and dict(third.actions) == {"attach": 1, "reject": 1}
    with corpus.staging.connect() as conn:
        held = conn.execute(
            select(func.count()).where(residuals.c.reason_code == "reflective_unsupported")
        ).scalar_one()
    assert held == 1  # judged again, not recorded twice
    assert (
        embedder.stats.computed == computed + 1
    )  # concepts came from the cache; only the new key was embedded
    goal = next(c for c in _concepts(corpus) if c["type"] == "goal")
    # its first mention, the event that is an instance of it, and the new restatement
    assert goal["support_count"] == 3 and goal["last_seen"] == datetime(2024, 3, 15, 7, 30, 10)


def test_replaying_the_log_rebuilds_the_table(corpus, home):
    consolidate(corpus, _embedder(home), HASHING)
    add_mentions(
        corpus,
        [
            mention(
                "m10",
                "marathon prep",
                "Dana signed up for the Berlin marathon",
                "goal",
                "Dana is preparing for the marathon.",
                0.8,
            )
        ],
    )
    consolidate(corpus, _embedder(home), HASHING)  # a second run appends to the same log
    empty = home.corpus("replayed")
    with corpus.staging.connect() as src, empty.staging.begin() as dst:
        n_concepts, n_evidence = log.rebuild_from_log(src, dst)
    assert n_concepts == 6 and n_evidence == 12
    assert _concepts(empty) == _concepts(corpus)
    assert _evidence(empty) == _evidence(corpus)


def test_action_log_is_append_only(corpus, home):
    consolidate(corpus, _embedder(home), HASHING)
    for statement in ("UPDATE action_log SET rationale = 'edited'", "DELETE FROM action_log"):
        with pytest.raises(Exception, match="append-only"), corpus.staging.begin() as conn:
            conn.execute(text(statement))


def test_the_concept_store_reads_and_writes_concept_hypotheses(corpus, home):
    consolidate(corpus, _embedder(home), HASHING)
    with corpus.staging.connect() as conn:
        rows = {r["concept_id"]: dict(r) for r in conn.execute(select(canonical_concepts)).mappings()}
        concepts = read_concepts(conn, states=LIVE_STATES)
    assert set(concepts) == {cid for cid, r in rows.items() if r["state"] in LIVE_STATES} and concepts
    for cid, c in concepts.items():
        assert isinstance(c, ConceptHypothesis) and concept_to_row(c) == rows[cid]  # the row, exactly
        assert rows[cid]["merged_into"] is None and c.merged_into == ""
        assert c.evidence_spans and all(isinstance(s, EvidenceSpan) for s in c.evidence_spans)
    # a patch's plain values become typed fields; a value outside the ontology is refused
    c = next(iter(concepts.values()))
    apply_patch(c, {"relations": [{"target_id": "k2", "relation": "supports", "confidence": 0.5}]})
    assert c.relations[0].relation == "supports"
    with pytest.raises(ValueError):
        apply_patch(c, {"state": "forgotten"})


def _crash_on_batch(monkeypatch, batch: int):
    """Make the ActionLog append of the `batch`-th batch fail (a run killed mid-batch); the real append."""
    calls = {"n": 0}
    real_append = log.append

    def crash(conn, records):
        calls["n"] += 1
        if calls["n"] == batch:
            raise RuntimeError("killed mid-batch")
        return real_append(conn, records)

    monkeypatch.setattr(log, "append", crash)
    return real_append


def test_a_crashed_run_resumes_to_the_same_result(corpus, home, tmp_path, monkeypatch):
    reference = home.corpus("reference")
    build_corpus(reference, tmp_path)
    consolidate(reference, _embedder(home), HASHING)

    real_append = _crash_on_batch(monkeypatch, 2)
    with pytest.raises(RuntimeError, match="killed"):
        consolidate(corpus, _embedder(home), HASHING)
    with corpus.staging.connect() as conn:  # the first batch (4 mentions) is written, the second is not
        assert (
            conn.execute(select(func.count()).where(mentions.c.consolidated_id.is_not(None))).scalar_one()
            + conn.execute(select(func.count()).select_from(residuals)).scalar_one()
            == 4
        )
    monkeypatch.setattr(log, "append", real_append)
    resumed = consolidate(corpus, _embedder(home), HASHING)
    assert resumed.pending == 11

    def shape(store):
        with store.staging.connect() as conn:
            by_mention = {
                r.mention_id: r.title for r in conn.execute(select(mentions.c.mention_id, mentions.c.title))
            }
            rows = conn.execute(select(canonical_concepts)).mappings().all()
            members = {}
            for r in conn.execute(select(concept_evidence.c.concept_id, concept_evidence.c.mention_id)):
                members.setdefault(r.concept_id, set()).add(by_mention[r.mention_id])
        return sorted(
            (
                r["title"],
                r["type"],
                r["state"],
                r["confidence"],
                r["support_count"],
                r["revision_count"],
                tuple(sorted(members[r["concept_id"]])),
            )
            for r in rows
        )

    assert shape(corpus) == shape(reference)


# ------------------------------------------------------------------------------------------------ patterns
RUNS = [  # Dana runs, told across four conversations; the last one says it stopped
    ("r1", "c1", "user", "I went running along the river this morning.", "2024-01-06T08:00:00Z"),
    ("r2", "c2", "user", "I went running in the park with my sister on Sunday.", "2024-02-04T09:00:00Z"),
    ("r3", "c3", "user", "I usually go running before work.", "2024-03-01T07:00:00Z"),
    ("r4", "c4", "user", "I stopped running after my knee injury.", "2024-05-01T07:00:00Z"),
    ("r5", "c3", "user", "I went running by the lake before breakfast.", "2024-03-02T07:00:00Z"),
]
RIVER = mention("r1", "I went running along the river this morning", "Dana went running along the river", "event",
                "Dana went running along the river this morning.", 0.6)  # fmt: skip
PARK = mention("r2", "I went running in the park with my sister on Sunday", "Dana went running in the park", "event",
               "Dana went running in the park with Dana's sister on Sunday.", 0.6)  # fmt: skip
HABIT = mention("r3", "I usually go running before work", "Dana goes running before work", "behavioral_pattern",
                "Dana usually goes running before work.", 0.65)  # fmt: skip
STOPPED = mention("r4", "I stopped running after my knee injury", "Dana stopped running", "event",
                  "Dana stopped running after Dana's knee injury.", 0.6)  # fmt: skip
# the hashing embedder's cosines of two runs told in other words are low (0.2): the threshold follows
LAKE = mention("r5", "I went running by the lake before breakfast", "Dana went running by the lake", "event",
               "Dana went running by the lake before breakfast.", 0.6)  # fmt: skip
PATTERNS = LoopConfig(rules=RouterRules(pattern_support_similarity=0.15), batch_size=4)


def _pattern_run(home, tmp_path, specs, name="runner"):
    store = home.corpus(name)
    build_corpus(store, tmp_path, turns=RUNS, specs=specs)
    report = consolidate(store, _embedder(home), PATTERNS)
    habits = [c for c in _concepts(store) if c["type"] == "behavioral_pattern"]
    with store.staging.connect() as conn:
        held = (
            conn.execute(select(residuals.c.reason_code).where(residuals.c.stage == "memory_loop"))
            .scalars()
            .all()
        )
    return report, habits, held


def test_a_pattern_stands_on_episodes_from_several_conversations(home, tmp_path):
    report, habits, held = _pattern_run(home, tmp_path, [RIVER, PARK, HABIT])
    (habit,) = habits
    assert report.reasons["pattern_supported"] == 1 and report.reasons["pattern_episode"] == 2 and held == []
    # its own phrasing and the two runs it rests on are its evidence; the runs remain events of their own
    assert sorted(s["text"] for s in habit["evidence_spans"]) == sorted(
        [HABIT["surface"], RIVER["surface"], PARK["surface"]]
    )
    assert habit["support_count"] == 3 and habit["description"].startswith(
        "Dana usually goes running before work."
    )
    assert "Dana went running along the river" in habit["description"].partition("Instances: ")[2]


def test_a_theme_is_read_off_episodes_in_several_conversations_unless_it_stopped(home, tmp_path):
    report, habits, held = _pattern_run(home, tmp_path, [RIVER, PARK, LAKE])
    (theme,) = habits  # no one said "I usually run": the three runs in three conversations say it
    assert theme["title"] == "Dana often talks about running" and report.reasons["theme_supported"] == 1
    assert sorted(s["text"] for s in theme["evidence_spans"]) == sorted(
        m["surface"] for m in (RIVER, PARK, LAKE)
    )
    assert theme["support_count"] == 3 and theme["state"] == "active"
    report, habits, held = _pattern_run(home, tmp_path, [RIVER, PARK, LAKE, STOPPED], name="quit")
    assert habits == []  # the latest of them says it stopped


def test_a_held_candidates_related_rows_are_in_the_facts_first_seen_order(home, tmp_path, monkeypatch):
    """`judge_pattern` gathers the related facts' rows ascending; its cosines are the per-fact path's floats
    only while ascending rows are `related`'s first-seen order (a product's floats depend on a row's
    place). Checked at every call of a real run, on loaded and on created facts; the run's times nest."""
    from memory_core.memory_loop import loop as loop_module
    from memory_core.memory_loop.support import fact_subject, salient_stems

    calls = []
    real = loop_module.judge_pattern

    def checked(facts, index, concepts, cand, vector, rules):
        subject, stems = fact_subject(cand.canonical_title), salient_stems(cand.canonical_title)
        in_order = [index.row_of(c) for c in facts.related(subject, stems) if c in index]
        calls.append(in_order)
        assert facts.related_rows(subject, stems, index).tolist() == in_order
        return real(facts, index, concepts, cand, vector, rules)

    monkeypatch.setattr(loop_module, "judge_pattern", checked)
    report, _, _ = _pattern_run(home, tmp_path, [RIVER, PARK, HABIT, STOPPED])
    assert calls and any(len(rows) > 1 for rows in calls)
    assert report.seconds >= report.held_seconds > 0 and report.seconds > report.write_seconds


def test_a_pattern_said_once_or_contradicted_later_stays_a_residual(home, tmp_path):
    report, habits, held = _pattern_run(home, tmp_path, [HABIT])
    assert habits == [] and held == ["reflective_unsupported"]
    report, habits, held = _pattern_run(home, tmp_path, [RIVER, PARK, HABIT, STOPPED], name="stopped")
    assert habits == [] and held == ["reflective_contradicted"] and report.patterns == {"residual": 1}


# ------------------------------------------------------------------------------------------------ metrics
def test_metrics_on_the_sample(corpus, home):
    embedder = _embedder(home)
    report = consolidate(corpus, embedder, HASHING)
    cov = metrics.coverage(corpus)
    # segments = rounds; every round with a consolidated mention is covered
    assert cov["segments"] == 6 and cov["coverage"] == pytest.approx(6 / 6)
    assert 0 < cov["high_confidence_coverage"] < cov["coverage"]
    pur = metrics.purity(corpus, embedder)
    assert pur["concepts_scored"] == 4 and 0.0 < pur["purity_min"] <= pur["purity"] <= 1.0
    assert pur["measure"] == "evidence_percentile"
    tot = metrics.totals(corpus)
    assert tot["compression"] == pytest.approx(10 / 6, abs=1e-3) and tot["residual_share"] == pytest.approx(
        5 / 15, abs=1e-4
    )
    assert tot["mentions_pending"] == 0
    run = report.run_figures()
    assert run["churn"] == pytest.approx(1 / 6, abs=1e-4) and 0 < run["residual_novelty"] <= 1
    assert metrics.grounding(corpus)["grounding"] == 1.0
    sample = metrics.concept_sample(corpus)
    assert "**garden planner app**" in sample and "“garden planner app”" in sample
    # a message whose text changed under its evidence breaks grounding of that concept
    with corpus.source.begin() as conn:
        conn.execute(
            update(messages).where(messages.c.source_ref == "m9").values(text="Someone ate my running shoes.")
        )
    g = metrics.grounding(corpus)
    assert g["grounding"] == pytest.approx(5 / 6, abs=1e-4) and g["ungrounded_concepts"] == 1


def test_router_keeps_co_mentioned_names_apart():
    router = Router()
    co = RetrievalHit(
        "k1", 0.9, 0.95, 0.0, 1.0, 1.0
    )  # same segment, no shared word, near-identical description
    d = router.route(cand(title="rocks"), [co], {"k1": view()})
    assert (d.action, d.reason_code) == ("create", "co_mentioned_distinct")
    same_name = RetrievalHit("k1", 0.9, 0.95, 1.0, 1.0, 1.0)
    assert router.route(cand(), [same_name], {"k1": view()}).action == "attach"
    elsewhere = RetrievalHit(
        "k2", 0.85, 0.95, 0.0, 0.0, 1.0
    )  # a paraphrase from another segment still matches
    d = router.route(cand(title="rocks"), [co, elsewhere], {"k1": view(), "k2": view("k2")})
    assert (d.action, d.concept_id) == ("attach", "k2")


# ------------------------------------------------------------------------------------------------ names
def test_names_of_one_thing_share_a_canonical_key():
    from memory_core.concepts.names import same_name

    for a, b in [("Postgres", "PostgreSQL"), ("NYC", "New York City"), ("LGBTQ+", "lgbtq"), ("k8s", "Kubernetes"),
                 ("Pickle ball", "pickleball"), ("the Kestrel", "Kestrel"), ("Caroline's", "Caroline")]:  # fmt: skip
        assert same_name(a, b), (a, b)
    for a, b in [("Grand Canyon", "Golden Coast"), ("Max", "Maxine"), ("Java", "JavaScript")]:
        assert not same_name(a, b), (a, b)  # two phrases with the same initials are not one name
    assert same_name("Ledger", "Ledgerly", {"ledger": "ledgerly"})  # a corpus's own alias table


def test_a_name_spelled_otherwise_is_retrieved_and_attached_unless_roles_differ():
    index = ConceptIndex(RetrieverWeights(), capacity=4)
    v = np.ones(8, dtype=np.float32) / np.sqrt(8)
    index.add("pg", v, "entity", ["PostgreSQL"], T0, T0)
    (found,) = index.retrieve(v, ["Postgres"], T0, "s-9", "c-9")
    assert found.concept_id == "pg" and found.lexical == 1.0
    router = Router()
    same = router.route(cand("Postgres", description="Postgres, mentioned by the user."), [hit(similarity=0.5, lexical=1.0)],
                        {"k1": view(description="PostgreSQL, mentioned by the assistant.")})  # fmt: skip
    assert same.action in ("attach", "refine")
    other = router.route(cand("Max", description="Max is Dana's coworker."), [hit(similarity=0.5, lexical=1.0)],
                         {"k1": view(description="Max is Dana's dog.")})  # fmt: skip
    assert other.action == "create"  # one name, two things: the roles say so


def test_purity_looks_at_the_evidence_not_the_keys(corpus, home):
    embedder = _embedder(home)
    consolidate(corpus, embedder, HASHING)
    before = metrics.purity(corpus, embedder)
    app = next(c for c in _concepts(corpus) if c["title"] == "garden planner app")
    # the same key for every mention, but a piece of evidence that says something else entirely
    with corpus.staging.begin() as conn:
        marathon = (
            conn.execute(select(mentions).where(mentions.c.surface.like("%Berlin%"))).mappings().first()
        )
        conn.execute(
            concept_evidence.insert().values(
                concept_id=app["concept_id"], mention_id=marathon["mention_id"], message_id=marathon["message_id"],
                segment_id=marathon["segment_id"], span_start=marathon["span_start"], span_end=marathon["span_end"],
                text=marathon["surface"], confidence=0.9, status="active",
            )
        )  # fmt: skip
    after = metrics.purity(corpus, embedder)
    cid = app["concept_id"]
    assert after["purity_by_concept"][cid] < before["purity_by_concept"][cid]


def test_each_evidence_span_is_written_to_a_concept_row_once(corpus, home):
    """Linear work: a batch writes each concept row it changed once, and a row gets only the spans appended
    since it was last written (not its whole evidence again), yet holds exactly what a full rewrite would."""
    writes: list[list] = [[]]  # per transaction: (statement, parameter sets) on canonical_concepts

    def spy(conn, cursor, statement, parameters, context, executemany):
        if "canonical_concepts" in statement and statement.lstrip().startswith(("UPDATE", "INSERT")):
            writes[-1].append((statement, parameters if executemany else [parameters]))

    engine = corpus.staging
    sqlalchemy_event.listen(engine, "before_cursor_execute", spy)
    sqlalchemy_event.listen(engine, "commit", lambda conn: writes.append([]))
    try:
        report = consolidate(corpus, _embedder(home), HASHING)
    finally:
        sqlalchemy_event.remove(engine, "before_cursor_execute", spy)
    assert report.batches >= 4 and sum(report.actions.values()) > 0
    spans_sent = 0
    for transaction in writes:
        ids = [p[0] if "INSERT" in s else p[-1] for s, params in transaction for p in params]
        assert len(ids) == len(set(ids))  # one write per concept row per batch
        spans_sent += sum(
            str(v).count('"char_start"') for _, params in transaction for p in params for v in p
        )
    with corpus.staging.connect() as conn:
        evidence_rows = conn.execute(select(func.count()).select_from(concept_evidence)).scalar_one()
        stored = conn.execute(text("SELECT concept_id, evidence_spans FROM canonical_concepts")).all()
        concepts = read_concepts(conn)
    assert spans_sent == evidence_rows  # each span encoded once, however often its concept was touched
    appended = [s for t in writes for s, _ in t if s.startswith("UPDATE") and "||" in s]
    assert appended  # the sample touches existing concepts in later batches
    for cid, raw in stored:  # the stored text is a full rewrite's: json.dumps of the whole list
        assert raw == json.dumps([s.model_dump() for s in concepts[cid].evidence_spans])


def test_update_concepts_appends_only_new_spans(corpus, home):
    consolidate(corpus, _embedder(home), HASHING)
    with corpus.staging.begin() as conn:
        concepts = read_concepts(conn)
        held = {cid: len(c.evidence_spans) for cid, c in concepts.items()}
        target = max(concepts.values(), key=lambda c: len(c.evidence_spans))
        empty = next(c for c in concepts.values() if c.concept_id != target.concept_id)
        extra = EvidenceSpan(
            source_id="s-x", message_id="msg-x", text="a new span", confidence=0.5, char_start=0, char_end=10
        )
        target.evidence_spans.append(extra)
        target.support_count += 1
        # a row stored with no evidence yet (`[]`) takes the appended spans as its whole list
        conn.execute(
            update(canonical_concepts)
            .where(canonical_concepts.c.concept_id == empty.concept_id)
            .values(evidence_spans=[])
        )
        # a stored list with trailing whitespace (another JSON writer) still ends in "]" once trimmed
        conn.exec_driver_sql(
            "UPDATE canonical_concepts SET evidence_spans = evidence_spans || char(10) WHERE concept_id = ?",
            (target.concept_id,),
        )
        update_concepts(conn, [target, empty], {**held, empty.concept_id: 0})
    with corpus.staging.connect() as conn:
        after = read_concepts(conn)
    assert concept_to_row(after[target.concept_id]) == concept_to_row(target)
    assert after[target.concept_id].evidence_spans[-1] == extra
    assert concept_to_row(after[empty.concept_id]) == concept_to_row(empty)


def test_the_loop_runs_numpys_blas_on_one_thread_and_restores_it():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from memory_core.blas import single_threaded_blas

    def blas_threads():
        return [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]

    np.ones((4, 4)) @ np.ones(4)  # numpy's BLAS is loaded
    before = blas_threads()
    assert before
    with single_threaded_blas():
        assert set(blas_threads()) == {1}
    assert blas_threads() == before


def _transactions(engine) -> tuple[list[dict], Callable[[], None]]:
    """Per committed transaction: concept ids of row UPDATEs, of action_log INSERTs, and listed / unlisted
    in concept_rows_behind."""
    seen: list[dict] = [{"updated": [], "acted": [], "listed": [], "unlisted": []}]

    def spy(conn, cursor, statement, parameters, context, executemany):
        params = parameters if executemany else [parameters]
        head = statement.lstrip()
        if head.startswith("UPDATE canonical_concepts"):
            seen[-1]["updated"] += [p[-1] for p in params]  # concept_id is the WHERE's, last, parameter
        elif head.startswith("INSERT INTO action_log"):
            at = [c.strip() for c in head.split("(", 1)[1].split(")", 1)[0].split(",")].index("concept_id")
            seen[-1]["acted"] += [p[at] for p in params if p[at] is not None]
        elif head.startswith("INSERT INTO concept_rows_behind"):
            seen[-1]["listed"] += [p[0] for p in params]
        elif head.startswith("DELETE FROM concept_rows_behind"):
            seen[-1]["unlisted"] += [v for p in params for v in p]

    def commit(conn):
        seen.append({"updated": [], "acted": [], "listed": [], "unlisted": []})

    sqlalchemy_event.listen(engine, "before_cursor_execute", spy)
    sqlalchemy_event.listen(engine, "commit", commit)

    def stop():
        sqlalchemy_event.remove(engine, "before_cursor_execute", spy)
        sqlalchemy_event.remove(engine, "commit", commit)

    return seen, stop


def _twin(store, tmp_path, **sample):
    """The same corpus (same name, so the same ids) in a home of its own."""
    twin = MemoryHome.resolve(tmp_path / "twin-home").corpus(store.name)
    build_corpus(twin, tmp_path, **sample)  # the same export file: the same message ids
    return twin


def _rows_without_times(store) -> dict[str, dict]:
    with store.staging.connect() as conn:
        return {
            cid: {k: v for k, v in concept_to_row(c).items() if k != "recorded_at"}
            for cid, c in read_concepts(conn).items()
        }


# Max the dog, told of in twelve messages over six conversations: a concept touched in every batch
DOG_DAYS = (
    "chewed a shoe|barked at the mailman|dug in the garden|slept all day|chased a cat|ate my toast|"
    "found a stick|swam in the lake|rolled in mud|howled at sirens|stole a sock|napped on the sofa"
).split("|")
DOG_TURNS = [
    (f"d{i}", f"c{i // 2}", "user", f"My dog Max {act} today.", f"2024-0{1 + i // 4}-{10 + i}T08:00:00Z")
    for i, act in enumerate(DOG_DAYS)
]
DOG_MENTIONS = [mention(t[0], "Max", "Max", "entity", "Max is Dana's dog.", 0.8) for t in DOG_TURNS]


def test_a_large_concept_row_is_rewritten_only_when_its_evidence_doubles(home, tmp_path, monkeypatch):
    """A concept row holds all its evidence and an UPDATE rewrites the whole row: a row past
    ROW_DEFER_MIN_SPANS is written again only once its evidence doubled (and at the run's end), so its writes
    grow with log(evidence), not with the batches that touch it — and the table ends exactly as with a write
    in every batch."""
    from memory_core.memory_loop import apply as loop_apply

    config = LoopConfig(rules=HASHING.rules, batch_size=1)
    dogs = home.corpus("dogs")
    build_corpus(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    reference = _twin(dogs, tmp_path, turns=DOG_TURNS, specs=DOG_MENTIONS)
    seen, stop = _transactions(reference.staging)
    consolidate(reference, _embedder(home), config)  # the sample's rows stay under 64 spans: none waits
    stop()
    every_batch = {cid: sum(t["updated"].count(cid) for t in seen) for cid in _rows_without_times(reference)}
    monkeypatch.setattr(loop_apply, "ROW_DEFER_MIN_SPANS", 1)  # every row with evidence waits to double
    seen, stop = _transactions(dogs.staging)
    try:
        consolidate(dogs, _embedder(home), config)
    finally:
        stop()
    assert _rows_without_times(dogs) == _rows_without_times(reference)
    assert _evidence(dogs) == _evidence(reference)
    with dogs.staging.connect() as conn:
        replay = log.replay_differences(conn)
        spans = {cid: len(c.evidence_spans) for cid, c in read_concepts(conn).items()}
    assert replay["differing"] == [] and replay["evidence_equal"]
    writes = {cid: sum(t["updated"].count(cid) for t in seen) for cid in spans}
    (max_id,) = [cid for cid, n in spans.items() if n == len(DOG_MENTIONS)]
    assert every_batch[max_id] == len(DOG_MENTIONS) - 1  # created, then rewritten by each of 11 batches
    assert writes[max_id] == 4  # at 2, 4 and 8 spans, and at the run's end
    for cid, n in spans.items():
        assert writes[cid] <= math.floor(math.log2(n)) + 1, (cid, writes[cid], n)


def test_a_crashed_run_repairs_the_rows_it_had_not_written(corpus, home, tmp_path, monkeypatch):
    """Rows waiting for their evidence to double when a run dies lag the action log; the next run rebuilds
    them from it before it loads, and ends where an uninterrupted run ends."""
    from memory_core.memory_loop import apply as loop_apply

    config = LoopConfig(rules=HASHING.rules, batch_size=2)
    reference = _twin(corpus, tmp_path)
    consolidate(reference, _embedder(home), config)
    monkeypatch.setattr(loop_apply, "ROW_DEFER_MIN_SPANS", 1)
    real_append = _crash_on_batch(monkeypatch, 5)
    with pytest.raises(RuntimeError, match="killed"):
        consolidate(corpus, _embedder(home), config)
    with corpus.staging.connect() as conn:
        assert log.replay_differences(conn)["differing"]  # rows the dead run had not written yet
    monkeypatch.setattr(log, "append", real_append)
    consolidate(corpus, _embedder(home), config)
    with corpus.staging.connect() as conn:
        assert log.replay_differences(conn)["differing"] == []
    assert _rows_without_times(corpus) == _rows_without_times(reference)
    assert _evidence(corpus) == _evidence(reference)


def test_subject_facts_find_an_instances_targets_by_type_without_scanning_other_facts():
    """`instance_target` looks only at goals and habits sharing a stem: the typed index gives exactly the
    filtered stem matches, in first-seen order, and a refined fact moves with its stems."""
    from memory_core.memory_loop.patterns import SubjectFacts

    facts = SubjectFacts()
    made = [
        concept("g1", "Dana wants to run a marathon", "goal", "Dana wants to run the Berlin marathon."),
        concept("f1", "Dana ran a marathon in Berlin", "event", "Dana ran the Berlin marathon."),
        concept("f2", "Dana runs every morning", "event", "Dana runs every morning."),
        concept("h1", "Dana often runs marathons", "behavioral_pattern", "Dana often runs marathons."),
        concept("g2", "Dana wants to adopt a dog", "goal", "Dana wants to adopt a dog."),
    ]
    for c in made:
        facts.add(c)
    stems = frozenset({"marathon"})
    every = facts.related("dana", stems)
    types = ("goal", "behavioral_pattern", "belief")
    typed = facts.related("dana", stems, types=types)
    assert typed == [c for c in every if facts.fact("dana", c).type in types] == ["g1", "h1"]
    assert facts.related("dana", stems, exclude="g1", types=types) == ["h1"]
    facts.add(concept("g1", "Dana wants to swim across a lake", "goal", "Dana wants to swim across a lake."))
    assert facts.related("dana", stems, types=types) == ["h1"]


def test_a_patterns_episode_rows_are_the_related_facts_and_their_cosines_the_same_floats():
    """`judge_pattern` reads a held candidate's related facts as kept index rows (one gather and product,
    no per-fact lookups): the rows are exactly the indexed related facts, a changed fact moves them, and
    the cosines are the floats the per-fact product gave."""
    from memory_core.memory_loop.patterns import SubjectFacts, _cosines, close_facts

    rng = np.random.default_rng(7)
    activities = ["running", "painting", "pottery", "chess", "sailing", "baking"]
    facts, index = SubjectFacts(), ConceptIndex()
    for i in range(300):
        title = f"Dana does {activities[i % 6]} with {activities[(i * 7) % 6]} friends {i}"
        made = concept(f"f{i:03d}", title, "event", title + ".")
        vector = rng.standard_normal(32).astype(np.float32)
        if i % 10:  # every tenth fact is not in the index
            index.add(
                made.concept_id,
                vector / np.linalg.norm(vector),
                "event",
                [title],
                made.first_seen,
                made.first_seen,
            )
        facts.add(made)

    def expected(stems: frozenset[str]) -> list[int]:
        return sorted(index.row_of(c) for c in facts.related("dana", stems) if c in index)

    stems = frozenset({"potteri", "chess"})
    rows = facts.related_rows("dana", stems, index)
    assert rows.tolist() == expected(stems) and len(rows) > 50
    for _ in range(20):
        vector = rng.standard_normal(32).astype(np.float32)
        gathered = dict(
            zip(map(index.id_at, rows.tolist()), (index.matrix[rows] @ vector).tolist(), strict=True)
        )
        related = [c for c in facts.related("dana", stems) if c in index]
        per_fact = _cosines(index, vector, related)
        assert gathered == per_fact  # bit for bit
        close = sorted((c for c in related if per_fact[c] >= 0.1), key=lambda c: (-per_fact[c], c))
        assert close_facts(facts, index, "dana", stems, vector, 0.1) == close and close
    facts.add(concept("f001", "Dana quit pottery", "event", "Dana quit pottery."))  # refined: new stems
    assert facts.related_rows("dana", stems, index).tolist() == expected(stems)
    assert facts.related_rows("dana", frozenset({"quit"}), index).tolist() == [index.row_of("f001")]
    assert facts.related_rows("dana", frozenset(), index).tolist() == []

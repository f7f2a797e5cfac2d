"""The browsing views (memory_query.browse) on the built demo and on a corpus whose facts change: what each
page model holds is what the stores hold, a long conversation opens around its message, the topic map places
every topic (from the build's layout, or from the centroids without one), the tree holds every topic once,
and a profile reads a fact's history with its validity."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import func, select

from memory_core.store.schema import (
    action_log,
    canonical_concepts,
    concept_evidence,
    conversations,
    messages,
    topic_concept_links,
    topics,
)
from memory_core.topics.topic_map import TOPIC_LAYOUT_FILE
from memory_query import ReaderPool, browse
from memory_query.browse import conversations as conversation_views
from memory_query.browse import profiles
from memory_query.browse import topics as topic_views
from tests.revision_samples import MOVES, build, offline_runner, write_chat


@pytest.fixture(scope="module")
def demo(built_demo):
    home, name = built_demo
    with ReaderPool(home) as pool:
        yield pool.reader(name), home.corpus(name, readonly=True)


def test_summary_counts_what_the_stores_hold(demo):
    reader, store = demo
    summary = browse.corpus_summary(reader)
    with store.source.connect() as conn:
        n_messages = conn.execute(select(func.count()).select_from(messages)).scalar_one()
    with store.staging.connect() as conn:
        live = conn.execute(
            select(func.count())
            .select_from(canonical_concepts)
            .where(canonical_concepts.c.state.in_(("active", "weak")))
        ).scalar_one()
        n_topics = conn.execute(select(func.count()).select_from(topics)).scalar_one()
    assert (summary.messages, summary.conversations) == (n_messages, 6) and summary.built
    assert (
        summary.concepts_live == live == sum(summary.concepts_by_type.values()) and summary.topics == n_topics
    )
    assert summary.first_message < summary.last_message


def test_a_conversation_in_order_with_its_concept_spans(demo):
    reader, store = demo
    listing = browse.conversation_list(reader)
    assert listing.total == 6 and [r.created_at for r in listing.rows] == sorted((r.created_at for r in listing.rows), reverse=True)  # fmt: skip
    assert [r.title for r in browse.conversation_list(reader, "kestrel").rows] == [
        "Kestrel launch", "Kestrel: moving off PostgreSQL", "Kestrel backend database choice",
    ]  # fmt: skip
    conv = next(r for r in listing.rows if r.title == "Kestrel: moving off PostgreSQL")
    view = browse.conversation_view(reader, conv.conversation_id)
    assert [m.position for m in view.messages] == sorted(m.position for m in view.messages)
    assert len(view.messages) == conv.message_count and (view.before, view.after) == (0, 0)
    with store.staging.connect() as conn:
        evidence = conn.execute(
            select(concept_evidence.c.message_id, concept_evidence.c.concept_id, concept_evidence.c.span_start, concept_evidence.c.span_end)
            .where(concept_evidence.c.message_id.in_([m.message_id for m in view.messages]), concept_evidence.c.status == "active")
        ).all()  # fmt: skip
    shown = {(m.message_id, c.concept_id) for m in view.messages for c in m.concepts}
    assert shown and shown <= {(e.message_id, e.concept_id) for e in evidence}
    for m in view.messages:
        for c in m.concepts:  # every span lies inside its message's text
            assert 0 <= c.span_start < c.span_end <= len(m.text)
    found = browse.locate_message(reader, view.messages[2].message_id)
    assert (found.conversation_id, found.position) == (conv.conversation_id, view.messages[2].position)
    assert browse.locate_message(reader, "no-such-message") is None
    assert browse.conversation_view(reader, "no-such-conversation") is None


def test_a_long_conversation_opens_around_its_message(demo, monkeypatch):
    reader, _ = demo
    monkeypatch.setattr(conversation_views, "WINDOW", 4)
    conv = next(r for r in browse.conversation_list(reader).rows if r.message_count == 9)
    whole = browse.conversation_view(reader, conv.conversation_id, start=0)
    assert len(whole.messages) == 4 and whole.after == 5
    everything = [
        m.message_id for m in browse.conversation_view(reader, conv.conversation_id, start=4).messages
    ]
    assert len(everything) == 4
    target = everything[-1]  # the 8th message: the window centres on it
    around = browse.conversation_view(reader, conv.conversation_id, focus=target)
    ids = [m.message_id for m in around.messages]
    assert target in ids and around.focus == target and around.before == 5 and around.after == 0


def test_a_concept_page_holds_its_evidence_decisions_and_topics(demo):
    reader, store = demo
    listing = browse.concept_list(reader)
    assert [r.support_count for r in listing.rows] == sorted(
        (r.support_count for r in listing.rows), reverse=True
    )
    assert listing.total == sum(listing.types.values())
    entities = browse.concept_list(reader, concept_type="entity")
    assert (
        entities.rows
        and {r.type for r in entities.rows} == {"entity"}
        and entities.total == listing.types["entity"]
    )
    duck = browse.concept_list(reader, "duckdb", concept_type="entity").rows[
        0
    ]  # the name, not a fact naming it
    page = browse.concept_page(reader, duck.concept_id)
    with store.staging.connect() as conn:
        n_evidence = conn.execute(
            select(func.count())
            .select_from(concept_evidence)
            .where(concept_evidence.c.concept_id == duck.concept_id)
        ).scalar_one()
        n_actions = conn.execute(
            select(func.count()).select_from(action_log).where(action_log.c.concept_id == duck.concept_id)
        ).scalar_one()
    assert page.concept.title == "DuckDB" and page.evidence_total == n_evidence == len(page.evidence)
    assert [e.created_at for e in page.evidence] == sorted(
        (e.created_at for e in page.evidence), reverse=True
    )
    assert all(e.text.casefold() == "duckdb" and e.conversation_title for e in page.evidence)
    with store.source.connect() as conn:
        texts = dict(conn.execute(select(messages.c.message_id, messages.c.text)).all())
    for e in page.evidence:  # the span in its words: the message's own text around it, on one line
        seen = e.before.removeprefix("…") + e.text + e.after.removesuffix("…")
        assert seen in texts[e.message_id].replace("\n", " ") and "\n" not in seen
    assert any(e.before or e.after for e in page.evidence)
    assert page.actions_total == n_actions and page.actions[-1].action == "create"
    assert all(0 < t.weight <= 100 for t in page.topics)
    # a concept a topic is RELATED_TO shows the topic with the link's weight
    with store.staging.connect() as conn:
        linked = conn.execute(
            select(topic_concept_links.c.concept_id).order_by(topic_concept_links.c.weight.desc())
        ).first()[0]
    topical = browse.concept_page(reader, linked)
    assert topical.topics and all(0 < t.weight <= 100 for t in topical.topics)
    assert browse.concept_page(reader, "no-such-concept") is None


def test_the_topic_map_places_every_topic_from_the_build_layout(demo, monkeypatch):
    reader, store = demo
    layout = json.loads(store.path(*TOPIC_LAYOUT_FILE).read_text())
    the_map = browse.topic_map(reader)
    with store.staging.connect() as conn:
        stored = dict(conn.execute(select(topics.c.topic_id, topics.c.size)).all())
    assert {t.topic_id: t.size for t in the_map.topics} == stored and set(layout["centres"]) == set(stored)
    assert "of the segments" in the_map.method and len(the_map.points) == layout["segments"]
    assert all(0 <= t.x <= 1 and 0 <= t.y <= 1 for t in the_map.topics)
    assert all(t.top_concepts for t in the_map.topics)
    assert the_map.noise_segments == sum(1 for *_, c in layout["points"] if c < 0)
    # a corpus built before the layout file existed: the centroids' principal components
    monkeypatch.setattr(topic_views, "LAYOUT_FILE", ("reports", "no_layout.json"))
    fallback = topic_views._build_map(reader)
    assert fallback.method == "PCA of the topic centroids" and {t.topic_id for t in fallback.topics} == set(
        stored
    )


def test_the_tree_holds_every_topic_once(demo):
    reader, store = demo
    tree = browse.topic_tree(reader)
    placed = [t.topic_id for d in tree.domains for a in d.anchors for t in a.topics]
    with store.staging.connect() as conn:
        stored = set(conn.execute(select(topics.c.topic_id)).scalars())
    assert sorted(placed) == sorted(stored)
    page = browse.topic_page(reader, placed[0])
    assert page.label and page.concepts and page.representatives
    assert all(r.conversation_title and r.first_message_id for r in page.representatives)
    assert [c.weight for c in page.concepts] == sorted((c.weight for c in page.concepts), reverse=True)
    assert browse.topic_page(reader, "no-such-topic") is None


def test_a_profile_reads_each_slot_with_its_history(home, instance, tmp_path, monkeypatch):
    runner = offline_runner(home, instance)
    assert build(runner, "moves", write_chat(tmp_path / "moves.jsonl", MOVES)).success
    with ReaderPool(home) as pool:
        reader = pool.reader("moves")
        subjects = browse.subject_list(reader)
        user = next(s for s in subjects.rows if s.subject == "user")
        assert (
            user.states >= user.slots >= user.current > 0
            and subjects.rows[0].states >= subjects.rows[-1].states
        )
        profile = browse.profile(reader, "user")
        slots = {h.slot: h for h in profile.slots}
        residence = slots["residence"]
        assert residence.current == "Seattle" and (residence.earlier, residence.later) == (0, 0)
        assert [(s.value, s.status) for s in residence.states] == [
            ("Portland", "superseded"),
            ("Seattle", "current"),
        ]
        portland, seattle = residence.states
        assert portland.valid_until == seattle.valid_from and str(seattle.valid_from).startswith("2024-07-15")
        assert portland.superseded_by.value == "Seattle" and seattle.evidence[0].cite.startswith("[Source:")
        assert residence.evidence[seattle.fact_state_id] == len(seattle.evidence)
        # slots with a current value come first
        currents = [h.current is not None for h in profile.slots]
        assert currents == sorted(currents, reverse=True)
        # a long history: its latest states on the profile, the rest a page at a time on the slot's own page
        monkeypatch.setattr(profiles, "STATES_SHOWN", 1)
        monkeypatch.setattr(profiles, "STATES_PER_PAGE", 1)
        latest = {h.slot: h for h in browse.profile(reader, "user").slots}["residence"]
        assert [s.value for s in latest.states] == ["Seattle"] and latest.earlier == 1
        page = browse.profile(reader, "user", slot="residence", offset=1)
        assert [h.slot for h in page.slots] == ["residence"] and page.slot == "residence"
        assert [s.value for s in page.slots[0].states] == ["Portland"] and (
            page.slots[0].earlier,
            page.slots[0].later,
        ) == (0, 1)
        assert browse.profile(reader, "user", slot="no-such-slot") is None
        assert browse.profile(reader, "nobody") is None
    with home.corpus("moves").source.connect() as conn:
        assert conn.execute(select(func.count()).select_from(conversations)).scalar_one() == 4

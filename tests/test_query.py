"""The read side on the demo corpus built through every stage: cited evidence, time travel, roles, the
reflective gate, and graceful fallback when parts of memory are missing."""

from __future__ import annotations

import shutil
from datetime import datetime

import pytest

from memory_query import PATH_NAMES, ReaderPool, RetrievalSettings, check_citations, query_memory
from memory_query.answer import extractive_answer
from memory_query.settings import UnknownPathError

RACE = "When is the Lisbon half marathon?"


def _copy(built_demo, tmp_path):
    """A private copy of the built demo (tests that remove parts of memory must not touch the shared one)."""
    home, name = built_demo
    from memory_core.store.db import MemoryHome, dispose_engines

    dispose_engines()
    shutil.copytree(home.root, tmp_path / "home")
    return MemoryHome.resolve(tmp_path / "home"), name


def test_query_returns_cited_evidence_and_the_four_blocks(built_demo):
    home, name = built_demo
    answer = query_memory(RACE, name, k=5, home=home)
    assert answer.items, "the race is discussed in the demo corpus"
    texts = " ".join(i.text for i in answer.items[:3])
    assert "half marathon" in texts
    for block in ("<direct_evidence>", "<associative_evidence>", "<source_provenance>"):
        assert block in answer.context
    assert "<reflective_hypotheses>" not in answer.context  # no access flag, no reflective block
    for item in answer.items:
        assert item.citation in answer.context
        assert item.source_ref and item.conversation_ref
        assert 0 <= item.span_start <= item.span_end
    for concept in answer.concepts:
        assert concept.evidence_message_ids
    text = extractive_answer(answer)
    assert check_citations(text, answer.citations).valid


def test_knowledge_update_ranks_the_newer_statement(built_demo):
    home, name = built_demo
    answer = query_memory("When was the half marathon moved to April 21?", name, k=3, home=home)
    assert "April 21" in answer.items[0].text


def test_as_of_is_time_travel(built_demo):
    home, name = built_demo
    before_move = datetime(2024, 2, 1)
    answer = query_memory(RACE, name, k=10, as_of=before_move, home=home)
    assert answer.items and all(i.created_at <= before_move for i in answer.items)
    assert not any("April 21" in i.text for i in answer.items)  # the move happened on 20 March
    later = query_memory(RACE, name, k=10, home=home)
    assert any("April 21" in i.text for i in later.items)


def test_roles_restrict_the_documents(built_demo):
    home, name = built_demo
    answer = query_memory("PostgreSQL or SQLite for Kestrel", name, k=8, roles=("user",), home=home)
    assert answer.items and all(i.role == "user" for i in answer.items)


def test_reflective_data_only_with_access(built_demo):
    home, name = built_demo
    question = "How did I feel about the deploy breaking?"
    closed = query_memory(question, name, k=5, home=home)
    assert closed.reflective == [] and "<reflective_hypotheses>" not in closed.context
    opened = query_memory(question, name, k=5, home=home, psychological_access=True)
    assert "<reflective_hypotheses>" in opened.context
    assert opened.reflective, "the demo user says they are frustrated with the deploy"
    assert {r.state for r in opened.reflective} & {"Frustration", "Exhaustion", "Anxiety"}


@pytest.mark.parametrize("remove", ["nothing", "graph", "indexes", "graph+indexes"])
def test_answers_from_the_source_whatever_is_missing(built_demo, tmp_path, remove):
    home, name = _copy(built_demo, tmp_path)
    store = home.corpus(name)
    if "graph" in remove:
        shutil.rmtree(store.dir / "graph")
    if "indexes" in remove:
        shutil.rmtree(store.dir / "indexes")
    answer = query_memory("Which database does Kestrel use for analytics?", name, k=5, home=home)
    assert list(answer.paths_available) == list(PATH_NAMES)
    assert answer.paths_available["graph"] is ("graph" not in remove)
    for path in ("dense_message", "dense_segment", "concept", "topic", "lexical", "session"):
        # the concept and topic paths read their vector indexes; without them the lexical paths run on BM25
        # built from the source, and concepts are still found by their words
        expected = "indexes" not in remove or path == "concept"
        assert answer.paths_available[path] is expected, path
    assert any("DuckDB" in i.text for i in answer.items[:3])
    assert check_citations(extractive_answer(answer), answer.citations).valid


def test_reader_picks_up_a_rebuilt_index(built_demo, tmp_path):
    home, name = _copy(built_demo, tmp_path)
    reader = ReaderPool(home).reader(name)
    first = reader.lexicon()[0]
    assert reader.lexicon()[0] is first  # cached while unchanged
    lexical = home.corpus(name).dir / "indexes" / "lexical" / "messages.npz"
    data = lexical.read_bytes()
    lexical.unlink()
    lexical.write_bytes(data)  # a rebuild: a new file at the same path
    import os

    os.utime(lexical, ns=(1, 1))
    assert reader.lexicon()[0] is not first


def test_citation_checker_rejects_uncited_and_unknown_sentences():
    known = {"[Source:a1]", "[Concept:c1]"}
    assert check_citations(
        "The race moved to April 21 [Source:a1]. It was a bridge closure [Concept:c1].", known
    ).valid
    report = check_citations("The race moved to April 21 [Source:a1]. It was a bridge closure.", known)
    assert not report.valid and report.uncited == ["It was a bridge closure."]
    report = check_citations("The race moved [Source:zz9].", known)
    assert not report.valid and report.unresolved == ["[Source:zz9]"]
    assert not check_citations("", known).valid


def test_a_named_participant_s_own_messages_rank_first(home, tmp_path):
    from memory_core.ingest.loader import ingest_file
    from tests.conftest import write_jsonl

    rows = [
        # Alice's message matches the words better; the question asks what Will did
        ("a1", "Alice", "We adopted a dog, a sweet rescue dog, from the shelter last spring."),
        ("w1", "Will", "I adopted a dog last spring."),
        ("a2", "Alice", "The weather was great for hiking."),
        ("w2", "Will", "Lunch is at noon on Fridays."),  # in another conversation, matching nothing
    ]
    store = home.corpus("party")
    ingest_file(
        store,
        write_jsonl(
            tmp_path / "party.jsonl",
            [
                {
                    "id": i,
                    "conversation_id": "c2" if i == "w2" else "c1",
                    "role": "user",
                    "author": who,
                    "text": text,
                    "created_at": f"2024-04-01T10:00:0{n}Z",
                }
                for n, (i, who, text) in enumerate(rows)
            ],
        ),
        "jsonl",
    )
    items = query_memory("When did Will adopt a dog?", store, k=5).items
    assert items[0].source_ref == "w1" and "speaker" in items[0].paths
    # naming Will lifts what other paths found; it does not return everything Will wrote
    assert "w2" not in [i.source_ref for i in items]
    # lower case "will" is a verb, not a name; with the path off the better lexical match wins
    assert query_memory("when will the dog be adopted?", store, k=3).items[0].source_ref == "a1"
    off = RetrievalSettings().with_weights(speaker=0.0)
    assert query_memory("When did Will adopt a dog?", store, k=3, settings=off).items[0].source_ref == "a1"


def test_one_path_vocabulary_from_the_registry(built_demo):
    """Settings, `paths_available`, `channel_scores`, an item's paths and the XML context name the same paths."""
    home, name = built_demo
    answer = query_memory("Which database does Kestrel use for analytics?", name, k=8, home=home)
    assert set(answer.paths_available) == set(PATH_NAMES)
    named = set()
    for item in answer.items:
        assert set(item.channel_scores) <= set(PATH_NAMES) and set(item.paths) <= set(item.channel_scores)
        named |= set(item.paths)
        assert f'paths="{",".join(item.paths)}"' in answer.context
    assert {"lexical", "dense_segment", "concept"} <= named
    assert "topic" not in named  # weight 0: it runs (it routes concepts) but is never fused
    assert set(RetrievalSettings().describe()["paths"]) == set(PATH_NAMES)
    with pytest.raises(UnknownPathError, match="unknown retrieval path.*dense"):
        RetrievalSettings().without("dense")
    with pytest.raises(UnknownPathError):
        RetrievalSettings().with_weights(vector=1.0)


def test_paths_switched_off_do_not_run(built_demo):
    home, name = built_demo
    question = "Which database does Kestrel use for analytics?"
    flat = RetrievalSettings().without("concept", "topic", "graph")
    assert flat.describe()["off"] == ["topic", "concept", "graph"]
    with ReaderPool(home) as pool:
        full = query_memory(question, name, k=8, pool=pool)
        answer = query_memory(question, name, k=8, pool=pool, settings=flat)
    assert full.concepts and full.topics
    assert answer.items and not answer.concepts and not answer.topics
    assert "concept" not in answer.timings_ms and "lexical" in answer.timings_ms
    for item in answer.items:
        assert not {"concept", "topic", "graph"} & (set(item.channel_scores) | set(item.paths))
        assert not item.concept_ids
    assert any("DuckDB" in i.text for i in answer.items[:3])  # the raw-source paths still answer


def test_a_pool_keeps_readers_and_closes_the_least_recent(built_demo, tmp_path):
    home, name = built_demo
    other_home, _ = _copy(built_demo, tmp_path)
    pool = ReaderPool(home, capacity=1)
    reader = pool.reader(name)
    assert pool.reader(name) is reader and pool.reader(home.corpus(name)) is reader
    query_memory("Kestrel", name, k=3, pool=pool)
    assert reader._cache, "the pool's reader holds what the query loaded"
    other = pool.reader(name, other_home)  # the same corpus name in another home is another corpus
    assert other is not reader and len(pool) == 1 and not reader._cache  # the evicted reader was closed
    pool.close()
    assert len(pool) == 0


def test_a_pool_warmed_in_the_background_has_loaded_what_a_query_reads(built_demo):
    """What the MCP server does at start: the first query then finds tables, lexicon and indexes loaded."""
    home, name = built_demo
    with ReaderPool(home) as pool:
        pool.warm_in_background([name, "not-a-corpus"]).join(timeout=300)
        reader = pool.reader(name)
        loaded = set(reader._cache)
        assert {"messages", "lexicon", "lexicon_alignment", "concepts", "topics", "speakers"} <= loaded
        assert {"vectors:messages", "vectors:segments", "vectors:concepts"} <= loaded
        answer = query_memory("Which database does Kestrel use for analytics?", name, k=5, pool=pool)
        assert answer.items and set(reader._cache) == loaded  # nothing left to load


def test_graph_synthesis_lends_the_answer_after_a_question_more(home, tmp_path):
    from memory_core.ingest.loader import ingest_file
    from tests.conftest import write_jsonl

    rows = [
        ("m1", "Ann", "I baked sourdough bread this morning."),
        ("m2", "Bob", "Nice! Any plans for the long weekend?"),
        ("m3", "Ann", "Driving up the coast with my sister."),
    ]
    store = home.corpus("weekend")
    records = [
        {"id": i, "conversation_id": "c1", "role": "user", "author": who, "text": text,
         "created_at": f"2024-04-01T10:00:0{n}Z", **({"parent_id": rows[n - 1][0]} if n else {})}
        for n, (i, who, text) in enumerate(rows)
    ]  # fmt: skip
    ingest_file(store, write_jsonl(tmp_path / "weekend.jsonl", records), "jsonl")
    one_seed = RetrievalSettings(context_seeds=1)  # the question is the strongest match, and the only seed
    items = {
        i.source_ref: i
        for i in query_memory("plans for the long weekend", store, k=3, settings=one_seed).items
    }
    assert items["m3"].channel_scores["graph"] == pytest.approx(2 * items["m1"].channel_scores["graph"])
    flat = RetrievalSettings(context_seeds=1, answer_share=1.0)
    items = {
        i.source_ref: i for i in query_memory("plans for the long weekend", store, k=3, settings=flat).items
    }
    assert items["m3"].channel_scores["graph"] == pytest.approx(items["m1"].channel_scores["graph"])


def test_the_lexical_path_takes_scores_in_table_order_as_they_are(home, tmp_path, monkeypatch):
    """When the lexicon's documents are the message table's rows in order, the lexical path hands the BM25
    scores over without a scatter; the scatter (an index in another order) gives the same scores."""
    import numpy as np

    from memory_core.ingest.loader import ingest_file
    from memory_query.paths import lexical
    from memory_query.reader import CorpusReader
    from memory_query.state import QueryState, visible_messages
    from tests.conftest import write_jsonl

    records = [
        {"id": f"m{n}", "conversation_id": f"c{n % 2}", "role": "user", "author": "Ann", "text": text,
         "created_at": f"2024-04-0{n + 1}T10:00:00Z"}
        for n, text in enumerate(["Sourdough bread again", "The coast road trip", "Bread and the coast"])
    ]  # fmt: skip
    store = home.corpus("bread")
    ingest_file(store, write_jsonl(tmp_path / "bread.jsonl", records), "jsonl")
    reader = CorpusReader(store)
    visible = visible_messages(reader.messages(), None, None)
    state = QueryState(reader, "bread on the coast", RetrievalSettings(), visible)
    docs, _ = reader.lexicon_alignment()
    assert reader.lexicon_in_table_order() == bool(np.array_equal(docs, np.arange(len(docs))))
    in_order = lexical(state)
    assert (in_order > 0).sum() == 3 and reader.messages().source_ref[in_order.argmax()] == "m2"
    monkeypatch.setattr(CorpusReader, "lexicon_in_table_order", lambda self, docs=None: False)
    assert np.array_equal(lexical(state), in_order)


def test_a_concepts_lexical_document_holds_its_evidence_words(home, tmp_path):
    from sqlalchemy import select

    from memory_core.embeddings import HashingEmbedder
    from memory_core.lexical import build_corpus_lexicon, tokenize
    from memory_core.memory_loop.loop import LoopConfig, consolidate
    from memory_core.memory_loop.router import RouterRules
    from memory_core.store.schema import canonical_concepts
    from tests.loop_samples import build_corpus

    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    consolidate(store, HashingEmbedder(), LoopConfig(rules=RouterRules(alias_attach_similarity=0.3)))
    with store.staging.connect() as conn:
        (max_id,) = conn.execute(
            select(canonical_concepts.c.concept_id).where(canonical_concepts.c.title == "Max")
        ).scalars()
    concepts = build_corpus_lexicon(store).concepts
    scores = dict(zip(concepts.ids, concepts.scores(tokenize("digging")), strict=True))
    # "Max is Dana's dog." says nothing of digging; the message it was read in does
    assert scores[max_id] > 0 and "dig" not in tokenize("Max is Dana's dog.")


def test_a_concepts_lexical_document_holds_its_evidence_in_context(home, tmp_path):
    """A concept's document holds each evidence message as the messages index has it: with the message before
    and after it in its conversation, so a concept is found by the question its evidence answers."""
    from sqlalchemy import select

    from memory_core.lexical import build_corpus_lexicon, tokenize
    from memory_core.store.schema import canonical_concepts, concept_evidence, messages

    store = _dana_in_porto(home, tmp_path)
    cc, ce = canonical_concepts.c, concept_evidence.c
    with store.source.connect() as conn:
        rows = conn.execute(select(messages.c.message_id, messages.c.source_ref, messages.c.text)).all()
    ref = {r.message_id: r.source_ref for r in rows}
    said = {r.source_ref: set(tokenize(r.text)) for r in rows}
    with store.staging.connect() as conn:
        evidence = {
            (r.type, ref[r.message_id]): r.concept_id
            for r in conn.execute(
                select(cc.type, ce.message_id, cc.concept_id).join(
                    concept_evidence, ce.concept_id == cc.concept_id
                )
            )
        }
    goal, event = evidence[("goal", "m1")], evidence[("event", "m3")]
    concepts = build_corpus_lexicon(store).concepts

    def score(words: str) -> dict[str, float]:
        return dict(zip(concepts.ids, concepts.scores(tokenize(words)), strict=True))

    # the goal's message (m1) says nothing of a trip; the reply after it (m2) does, in the goal's conversation
    trip, lovely = set(tokenize("great trip")), set(tokenize("lovely"))
    assert trip and not trip & said["m1"] and trip <= said["m2"]
    assert score("great trip")[goal] > 0 and score("great trip")[event] == 0
    assert lovely and not lovely & said["m3"] and lovely <= said["m4"]  # m4 answers the event's m3
    assert score("lovely")[event] > 0 and score("lovely")[goal] == 0


def _dana_in_porto(home, tmp_path):
    """A goal and an event about the same place, one month apart, built by the offline teacher and loop."""
    from memory_core.embeddings import HashingEmbedder
    from memory_core.extraction.offline_teacher import OfflineTeacher
    from memory_core.extraction.stage import extract_corpus
    from memory_core.ingest.loader import ingest_file
    from memory_core.memory_loop.loop import LoopConfig, consolidate
    from memory_core.segments import build_segments
    from tests.conftest import write_jsonl

    rows = [
        ("m1", "c1", "Dana", "I want to visit Porto again next year.", "2024-03-01T10:00:00Z"),
        ("m2", "c1", "Assistant", "That would be a great trip, Dana.", "2024-03-01T10:00:05Z"),
        ("m3", "c2", "Dana", "I visited Porto last weekend with my sister.", "2024-05-10T10:00:00Z"),
        ("m4", "c2", "Assistant", "Sounds lovely!", "2024-05-10T10:00:05Z"),
    ]
    records = [
        {"id": i, "conversation_id": c, "role": "user" if who == "Dana" else "assistant", "author": who,
         "text": text, "created_at": at}
        for i, c, who, text, at in rows
    ]  # fmt: skip
    store = home.corpus("dana")
    ingest_file(store, write_jsonl(tmp_path / "dana.jsonl", records), "jsonl")
    build_segments(store)
    extract_corpus(store, OfflineTeacher())
    consolidate(store, HashingEmbedder(), LoopConfig())
    return store


def test_the_concept_type_a_question_asks_for_routes_it(home, tmp_path):
    from memory_core.ontology.concepts import CONCEPT_TYPES
    from memory_query.question_types import _CUES, asked_concept_types

    assert all(types <= set(CONCEPT_TYPES) for _, types in _CUES)  # a misspelt type would be a dead cue
    assert asked_concept_types("When did Caroline go to the LGBTQ support group?") == {"event"}
    assert asked_concept_types("What career path has Caroline decided to pursue?") == {"goal"}
    assert "belief" in asked_concept_types("What does Melanie think about pottery?")
    assert asked_concept_types("Where did Dana put the keys?") == frozenset()

    store = _dana_in_porto(home, tmp_path)
    question = "When did Dana visit Porto?"  # both concepts share its words; "when" asks for the event
    typed = query_memory(question, store, k=2).items
    assert [i.source_ref for i in typed] == ["m3", "m1"]
    assert typed[0].channel_scores["concept"] == 1.0 > typed[1].channel_scores["concept"]
    untyped = query_memory(question, store, k=2, settings=RetrievalSettings(concept_type_boost=0.0)).items
    assert untyped[0].source_ref == "m1"  # the shorter goal statement matches the words better
    wants = query_memory("What does Dana want to do in Porto?", store, k=1).items
    assert wants[0].source_ref == "m1"


def test_a_hub_concepts_evidence_is_lent_by_closeness_to_the_question(home, tmp_path):
    """A concept with many evidence messages lends its score by how close each is to the question, so the
    concept path alone puts the message the question asks about first; a concept with fewer keeps lending
    all of it to each (here Max's two messages are a hub at `concept_evidence_ranked_from=2`)."""
    from dataclasses import replace

    from memory_core.embeddings import HashingEmbedder
    from memory_core.memory_loop.loop import LoopConfig, consolidate
    from memory_core.memory_loop.router import RouterRules
    from memory_core.vector_index import build_family_index
    from tests.loop_samples import build_corpus

    store = home.corpus("dana")
    build_corpus(store, tmp_path)
    consolidate(store, HashingEmbedder(), LoopConfig(rules=RouterRules(alias_attach_similarity=0.3)))
    build_family_index(store, "messages", HashingEmbedder())
    concept_only = RetrievalSettings().without(*(p for p in PATH_NAMES if p != "concept"))

    def concept_scores(question: str, ranked_from: int) -> dict[str, float]:
        settings = replace(concept_only, concept_evidence_ranked_from=ranked_from)
        return {
            i.source_ref: i.channel_scores["concept"]
            for i in query_memory(question, store, k=5, settings=settings).items
        }

    shoes, digging = "Max and the running shoes", "What did Max dig up?"
    # Max's evidence: m3 (digging up the tomato beds) and m9 (ate the running shoes), same confidence
    assert concept_scores(shoes, 0)["m3"] == concept_scores(shoes, 0)["m9"] == 1.0
    assert concept_scores(shoes, 3)["m3"] == concept_scores(shoes, 3)["m9"]  # two are not a hub at 3
    ranked = concept_scores(shoes, 2)
    assert list(ranked)[0] == "m9" and ranked["m9"] == 1.0 > ranked["m3"]
    assert concept_scores(digging, 0)["m9"] == 1.0 > concept_scores(digging, 2).get("m9", 0.0)
    assert list(concept_scores(digging, 2))[0] == "m3"
    # the answer shows of a hub the evidence it lent to, the question's pick first
    answer = query_memory(shoes, store, k=5, settings=replace(concept_only, concept_evidence_ranked_from=2))
    refs = {i.message_id: i.source_ref for i in answer.items}
    (max_hit,) = [c for c in answer.concepts if c.title == "Max"]
    assert [refs.get(mid) for mid in max_hit.evidence_message_ids] == ["m9"]


@pytest.mark.parametrize(
    ("ids", "closeness", "ranked_from", "shares"),
    [
        (["a", "b"], {"a": 0.9, "b": 0.1}, 3, [1.0, 1.0]),  # fewer than ranked_from: a fact, all of it
        (["a", "b", "c"], {"a": 0.9, "b": 0.1, "c": 0.5}, 3, [1.0, 0.0, 0.5]),  # a hub: min-max
        (["a", "b", "c"], {"a": 0.9, "b": 0.1, "c": 0.5}, 0, [1.0, 1.0, 1.0]),  # 0: never ranked
        (["a", "b", "c"], {"a": 0.9, "b": 0.1}, 3, [1.0, 0.0, 1.0]),  # not in the index yet: all of it
        (["a", "b", "c"], {}, 3, [1.0, 1.0, 1.0]),  # no messages index: all of it
        (["a", "b", "c"], {"a": 0.4, "b": 0.4, "c": 0.4}, 3, [1.0, 1.0, 1.0]),  # nothing to tell apart
    ],
)
def test_evidence_shares(ids, closeness, ranked_from, shares):
    from memory_query.paths import _evidence_shares

    assert _evidence_shares(ids, closeness, ranked_from) == pytest.approx(shares)

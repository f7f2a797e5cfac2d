"""The offline Scout's graph walks and the offline count, on a small reading history built by the project's
runner (every stage, offline teacher, hashing embeddings): NEXT from a question to its reply, EVIDENCE_FOR
from a concept to its evidence inside a comparison's 6 steps, a count of the books stated over several
sessions of March, `[Concept:ID]` citations."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import select

from memory_core.store.db import MemoryHome
from memory_core.store.schema import messages
from memory_query import ReaderPool, ask, check_citations  # `ask` is exported beside query_memory
from memory_query.agent.counting import counted_noun, counts_places, named_items
from memory_query.agent.synthesizer import enforce_citations
from tests.conftest import write_json
from tests.samples import chatgpt_node

LONG_DAY = (
    "Long day today: the train was late again, I spent the evening sorting out the heating in the flat, "
    "called my sister about her birthday plans, fixed the back brake on the bike and cooked a big pot of "
    "lentil soup for the week. Oh, and I finally joined Hollowbrook Readers, the club at the library."
)
# (title, day, [(role, text), …]); times in 2025, UTC
HISTORY = [
    ("A long day", (1, 20), [("user", LONG_DAY), ("assistant", "That is a full day. Enjoy the soup this week.")]),
    ("Flight reading", (2, 10), [
        ("user", "I read Project Hail Mary on the flight home, a fun book."),
        ("assistant", "Glad you liked it: Andy Weir keeps the science surprisingly careful."),
    ]),
    ("Dune", (3, 4), [
        ("user", "I finished reading Dune by Frank Herbert last night."),
        ("assistant", "Dune rewards a second read; the appendices explain the ecology of Arrakis."),
    ]),
    ("Le Guin", (3, 15), [
        ("user", "This week I read The Left Hand of Darkness, what a book."),
        ("assistant", "A classic. You might try The Dispossessed next, it is a book about a divided world."),
    ]),
    ("Weekend", (3, 27), [
        ("user", "Finished the book Piranesi this weekend, I loved the house and its tides."),
        ("assistant", "Piranesi is a strange and gentle novel; Susanna Clarke wrote it after a long illness."),
    ]),
    ("Book club pick", (4, 2), [
        ("user", "We meet on April 20 and it is my turn to pick, can you recommend a novel for my book club?"),
        ("assistant", "Try Klara and the Sun by Kazuo Ishiguro: short chapters and lots to discuss."),
    ]),
]  # fmt: skip
ASKED = datetime(2025, 4, 10)


def reading_export() -> list[dict]:
    out = []
    for n, (title, (month, day), turns) in enumerate(HISTORY):
        t0 = datetime(2025, month, day, 19, 0, tzinfo=UTC).timestamp()
        ids = [f"c{n}-m{i}" for i in range(len(turns))]
        mapping = {f"c{n}-root": chatgpt_node(f"c{n}-root", None, None, None, ids[:1])}
        for i, (role, text) in enumerate(turns):
            parent = ids[i - 1] if i else f"c{n}-root"
            mapping[ids[i]] = chatgpt_node(ids[i], role, text, parent, ids[i + 1 : i + 2], t=t0 + 60 * i)
        out.append({"title": title, "create_time": t0, "mapping": mapping, "current_node": ids[-1],
                    "conversation_id": f"reading-{n}"})  # fmt: skip
    return out


@pytest.fixture(scope="module")
def reading(tmp_path_factory):
    """(home, name, message id by its text's first words) of the reading history, built once."""
    import dagster as dg

    from memory_assets.runner import CorpusRunner
    from memory_core.corpora import plan_corpora
    from memory_resources.embeddings import EmbeddingsResource

    root = tmp_path_factory.mktemp("reading")
    home = MemoryHome.resolve(root / "home")
    export = write_json(root / "conversations.json", reading_export())
    (root / "dagster").mkdir()
    with dg.instance_for_test(temp_dir=str(root / "dagster")) as instance:
        hashing = EmbeddingsResource(provider="hashing", hashing_dim=256)
        runner = CorpusRunner(home, instance, resources={"embeddings": hashing})
        runner.register(plan_corpora("reading", export))
        assert runner.materialize("reading").success
    with home.corpus("reading").source.connect() as conn:
        rows = conn.execute(select(messages.c.message_id, messages.c.text)).all()
    return home, "reading", {r.text[:30]: r.message_id for r in rows}


@pytest.fixture(scope="module")
def pool(reading):
    with ReaderPool(reading[0]) as pool:
        yield pool


def mid(reading, start: str) -> str:
    return next(m for text, m in reading[2].items() if text.startswith(start))


def _valid(answer) -> None:
    known = {e.citation for e in answer.evidence} | {c["citation"] for c in answer.concepts}
    assert check_citations(answer.answer, known).valid, answer.answer
    assert 3 <= len(answer.steps) <= 6


def test_a_question_found_first_is_walked_next_to_its_reply(reading, pool):
    answer = ask("What novel did you recommend for my book club?", reading[1], as_of=ASKED, pool=pool)
    question, reply = mid(reading, "We meet on April 20"), mid(reading, "Try Klara and the Sun")
    walk = next(s for s in answer.steps if s.tool == "read_source_message")
    assert walk.arguments["message_id"] == question and reply in walk.ids
    assert walk.note.startswith("ok")  # the reply to the question answers it, whatever its words
    taken = {e.message_id: e for e in answer.evidence}
    assert taken[reply].why == f"NEXT after [Source:{question}]"
    _valid(answer)
    assert f"[Source:{reply}]" in answer.answer and "Klara and the Sun" in answer.answer
    assert len(answer.steps) <= 6


def test_a_failed_part_of_a_comparison_walks_evidence_for_inside_six_steps(reading, pool):
    answer = ask("Which did I do first, join Hollowbrook Readers or finish Piranesi?", reading[1], pool=pool)
    joined, piranesi = mid(reading, "Long day today"), mid(reading, "Finished the book Piranesi")
    searches = [s for s in answer.steps if s.tool == "smart_search"]
    assert searches[0].note.startswith("failed")  # the long message's snippet stops before the club
    walk = next(s for s in answer.steps if s.tool == "lens")
    assert walk.arguments["paths"] == ["Concept>Message"] and joined in walk.ids
    concept = walk.arguments["node_id"]
    # the walk came before the whole question's search, which the step cap then left out
    assert len(answer.steps) == 6 and answer.stopped_by == "steps"
    assert [s.tool for s in answer.steps[1:5]] == ["smart_search", "smart_search", "lens", "submit_evidence"]
    evidence = {e.message_id: e for e in answer.evidence}
    assert evidence[joined].why == f"EVIDENCE_FOR [Concept:{concept}]"
    _valid(answer)
    assert answer.answer.index(joined) < answer.answer.index(piranesi)
    assert answer.answer.startswith("Join Hollowbrook Readers came first")


def test_a_count_counts_the_books_stated_over_the_sessions_of_march(reading, pool):
    answer = ask("In March, how many books did I read?", reading[1], as_of=ASKED, pool=pool)
    plan = answer.plan
    assert plan.intent == "count" and plan.time_range.start == datetime(2025, 3, 1)
    dune, darkness, piranesi = (
        mid(reading, s) for s in ("I finished reading Dune", "This week I read The Left", "Finished the book Piranesi")
    )  # fmt: skip
    _valid(answer)
    head = answer.answer.split(". ")[0]
    assert head.startswith("3 books:"), answer.answer
    for title, message_id in (
        ("Dune", dune),
        ("The Left Hand of Darkness", darkness),
        ("Piranesi", piranesi),
    ):
        assert f"{title} [Source:{message_id}]" in head
    # February's book, the author, and the assistant's suggestion are not books read in March
    for other in ("Project Hail Mary", "Frank Herbert", "The Dispossessed"):
        assert other not in head
    assert len({e.conversation_id for e in answer.evidence if e.citation in head}) == 3


def test_the_same_count_asked_the_other_way_round_is_planned_alike(reading, pool):
    first = ask("How many books did I read in March?", reading[1], as_of=ASKED, pool=pool)
    later = ask("In March, how many books did I read?", reading[1], as_of=ASKED, pool=pool)
    assert first.plan.intent == later.plan.intent == "count"
    ranges = [(a.plan.time_range.start, a.plan.time_range.end) for a in (first, later)]
    assert ranges[0] == ranges[1] == (datetime(2025, 3, 1), datetime(2025, 3, 31, 23, 59, 59))
    assert first.answer.split(". ")[0] == later.answer.split(". ")[0]


def test_a_concept_whose_evidence_answers_is_cited_and_checked(reading, pool):
    answer = ask("Which did I do first, join Hollowbrook Readers or finish Piranesi?", reading[1], pool=pool)
    walk = next(s for s in answer.steps if s.tool == "lens")
    concept = f"[Concept:{walk.arguments['node_id']}]"
    assert concept in {c["citation"] for c in answer.concepts}
    lookup = ask("When did I join Hollowbrook Readers?", reading[1], pool=pool)
    cited = {c["citation"] for c in lookup.concepts if c["citation"] in lookup.answer}
    assert cited, lookup.answer  # the offline Synthesizer cites the concept with the message behind it
    _valid(lookup)
    known = {e.citation for e in lookup.evidence} | {c["citation"] for c in lookup.concepts}
    kept, dropped = enforce_citations(
        f"You joined the club {next(iter(cited))}. It meets on Tuesdays [Concept:not-in-the-evidence].", known
    )
    assert kept == f"You joined the club {next(iter(cited))}." and "not-in-the-evidence" in dropped[0]["why"]


def test_the_items_a_sentence_names():
    assert named_items("I finished reading Dune by Frank Herbert last night.") == ["Dune"]
    assert named_items("This week I read The Left Hand of Darkness, what a book.") == [
        "The Left Hand of Darkness"
    ]
    assert named_items("Finished the book Piranesi this weekend, I loved the house.") == ["Piranesi"]
    assert named_items('I loved "Klara and the Sun" most.') == ["Klara and the Sun"]
    switched = "Update on Kestrel: we switched from PostgreSQL to DuckDB for the analytics side."
    assert named_items(switched, context=frozenset({"kestrel"}))[-2:] == ["PostgreSQL", "DuckDB"]
    assert "Kestrel" not in " ".join(named_items(switched, context=frozenset({"kestrel"})))
    # "I" ends a name; a name after "in" is where, not what, unless places are counted or nothing else is named
    assert named_items("I want to learn Portuguese in Lisbon I think.") == ["Portuguese"]
    assert named_items("I want to learn Portuguese in Lisbon I think.", places=True) == [
        "Portuguese",
        "Lisbon",
    ]
    offer = "Big news: I accepted a job offer in Lisbon at a mobility startup called Andorinha."
    assert named_items(offer) == ["Andorinha"]
    assert named_items("I got a job in Lisbon.") == ["Lisbon"]
    assert counts_places(counted_noun("How many cities did I visit?"))
    assert not counts_places(counted_noun("How many jobs have I had?"))
    assert counted_noun("In March, how many books did I read?") == "books"
    assert counted_noun("How many people helped me with Kestrel?") == "people"


def test_a_count_holds_the_head_of_what_it_counts(reading, pool):
    # "book clubs": a sentence with "book" alone ("what a book") is no club; the club joined is one
    clubs = ask("How many book clubs did I join?", reading[1], as_of=ASKED, pool=pool)
    joined = mid(reading, "Long day today")
    assert clubs.answer.startswith(f"1 book club: Hollowbrook Readers [Source:{joined}].")
    _valid(clubs)
    kits = ask("How many model kits have I bought?", reading[1], as_of=ASKED, pool=pool)
    assert kits.plan.intent == "count" and kits.abstained and "[Source:" not in kits.answer


def test_a_word_both_parts_borrowed_answers_neither(reading, pool):
    # "Dune" and "Piranesi" are too short to search alone: both borrow "read"; the sentence holding "read"
    # (Dune's) must not answer Piranesi
    answer = ask("Which did I read first, Dune or Piranesi?", reading[1], as_of=ASKED, pool=pool)
    assert [s.text for _, s in answer.plan.parts] == ["Dune read", "Piranesi read"]
    head = answer.answer.split(". ")[0]
    assert head.startswith("Dune read came first (2025-03-04") and "then Piranesi read (2025-03-27" in head
    first, then = (next(e for e in answer.evidence if e.citation in part) for part in head.split(", then"))
    assert "Dune" in first.text and "Piranesi" in then.text  # each part answered by its own session
    _valid(answer)

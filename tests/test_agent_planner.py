"""The offline Planner's rules: decomposition of comparisons, counts and multi-part questions, time ranges read
against the question's date, event anchors, and the plan's memory of tried strategies."""

from __future__ import annotations

from datetime import datetime

import pytest

from memory_query.agent.findings import Candidate, compose
from memory_query.agent.plan import Strategy
from memory_query.agent.planner import make_plan
from memory_query.agent.timeframe import find_event_anchor, find_time_range

ASKED = datetime(2023, 5, 30, 22, 10)  # a Tuesday


@pytest.mark.parametrize(
    ("question", "parts", "order", "measure"),
    [
        (
            "Which did I do first, fixing the fence or trimming the goats' hooves?",
            ["fixing the fence", "trimming the goats' hooves"],
            "first",
            None,
        ),
        (
            "Which trip did I take first, the solo trip to Europe or the family road trip across Arizona?",
            ["solo trip to Europe", "family road trip across Arizona"],
            "first",
            None,
        ),
        (
            "How many days passed between the day I bought the bike and the day I sold my car?",
            ["I bought the bike", "I sold my car"],
            "first",
            "days",
        ),
        (
            "How many months before my wedding did my sister get engaged?",
            ["my wedding", "my sister get engaged"],
            None,
            "months",
        ),
        ("Did I start yoga before I moved to Lisbon?", ["I start yoga", "I moved to Lisbon"], "first", None),
    ],
)
def test_comparisons_are_split_into_parts(question, parts, order, measure):
    plan = make_plan(question, ASKED)
    assert plan.intent == "comparison"
    assert [s.text for _, s in plan.parts] == parts and [s.label for _, s in plan.parts] == ["A", "B"]
    assert plan.subs[-1].label == "whole question" and not plan.subs[-1].answered  # searched for context
    assert plan.order == order and plan.measure == measure


def test_a_part_too_short_to_search_alone_borrows_the_question_words():
    plan = make_plan("Which vehicle did I take care of first in February, the bike or the car?", ASKED)
    assert plan.intent == "comparison"
    assert [s.text.split()[0] for _, s in plan.parts] == ["bike", "car"]
    assert all("vehicle" in s.text for _, s in plan.parts)
    assert plan.time_range.start == datetime(2023, 2, 1)  # "in February" asked in May: this year's


def test_counts_collect_over_sessions():
    plan = make_plan("How many model kits have I bought or worked on?", ASKED)
    assert plan.intent == "count"
    assert [s.label for s in plan.subs] == ["main", "items"] and plan.subs[1].text == "model kits"
    plan = make_plan("What is the total amount I spent on luxury items in the past few months?", ASKED)
    assert plan.intent == "count" and plan.time_range.start == datetime(2023, 2, 27)
    assert "past few months" not in plan.subs[0].text  # time words are not searched for
    # an amount of time is a measure, not a count
    plan = make_plan("How many weeks ago did I attend the pottery workshop?", ASKED)
    assert plan.intent == "lookup" and plan.measure == "weeks" and plan.time_range is None


def test_several_questions_in_one_are_split():
    plan = make_plan("Where did I go on holiday, and what did I buy there?", ASKED)
    assert plan.intent == "multi_part"
    assert [s.text for s in plan.subs] == ["Where did I go on holiday", "what did I buy there?"]
    assert make_plan("What did Ann and Bob cook?", ASKED).intent == "lookup"  # "and" between names


@pytest.mark.parametrize(
    ("words", "asked", "inside", "outside"),
    [
        ("last month", ASKED, [datetime(2023, 4, 2), datetime(2023, 5, 29)], [datetime(2023, 3, 30)]),
        ("in March", ASKED, [datetime(2023, 3, 1), datetime(2023, 3, 31, 20)], [datetime(2023, 4, 1)]),
        ("in March", datetime(2023, 2, 10), [datetime(2022, 3, 15)], [datetime(2023, 3, 15)]),
        ("two weeks ago", ASKED, [datetime(2023, 5, 16), datetime(2023, 5, 12)], [datetime(2023, 5, 28)]),
        ("last Saturday", datetime(2023, 4, 22, 8), [datetime(2023, 4, 15, 18)], [datetime(2023, 4, 22, 7)]),
        ("this month", ASKED, [datetime(2023, 5, 1), ASKED], [datetime(2023, 4, 30)]),
        ("in the last month", ASKED, [datetime(2023, 4, 30)], [datetime(2023, 4, 20)]),
        ("yesterday", ASKED, [datetime(2023, 5, 29, 9)], [datetime(2023, 5, 20)]),
        ("in 2022", ASKED, [datetime(2022, 7, 1)], [datetime(2023, 1, 2)]),
    ],
)
def test_time_ranges_are_read_against_the_question_date(words, asked, inside, outside):
    found = find_time_range(f"What did I do {words}?", asked)
    assert found is not None and found.label.lower().endswith(words.lower().split()[-1])
    assert all(found.contains(t) for t in inside), found
    assert not any(found.contains(t) for t in outside), found


def test_questions_for_an_amount_of_time_name_no_range():
    assert find_time_range("How many days ago did I read the March 15th issue?", ASKED) is None
    assert find_time_range("What did I serve for dinner?", ASKED) is None


def test_an_event_anchor_is_dated_by_what_the_scout_finds():
    anchor = find_event_anchor("What did I cook most before I moved to Lisbon?")
    assert anchor.event == "I moved to Lisbon" and anchor.relation == "before"
    moved = datetime(2023, 1, 20)
    window = anchor.range_from(moved, ASKED)
    assert window.contains(datetime(2022, 12, 1)) and not window.contains(datetime(2023, 2, 1))
    plan = make_plan("What did I cook most before I moved to Lisbon?", ASKED)
    assert plan.anchor == anchor and "Lisbon" not in plan.subs[0].text


def test_the_plan_remembers_tried_strategies():
    plan = make_plan("Who is my manager?", ASKED)
    search = Strategy.of("smart_search", {"query": "manager", "k": 10}, 0, "search")
    plan.record(search, "failed")
    assert plan.was_tried(Strategy.of("smart_search", {"k": 10, "query": "manager"}, 0, "another label"))
    assert not plan.was_tried(Strategy.of("smart_search", {"query": "manager", "k": 20}, 0, "search"))
    assert search.key in plan.failed and plan.as_dict()["tried"][0]["outcome"] == "failed"


def _candidate(mid, conv, sub, rank, strategy="search"):
    return Candidate(mid, conv, ASKED, "", 1.0, [], sub, strategy, rank, True)


def test_composition_keeps_both_parts_and_spreads_a_count_over_sessions():
    # part A's search found a1..a3 (one session), part B's b1..b2: both are in the top 2
    found = [_candidate(f"a{i}", "s1", 0, i) for i in (1, 2, 3)] + [
        _candidate(f"b{i}", "s2", 1, i) for i in (1, 2)
    ]
    assert [c.message_id for c in compose(found, "comparison", 2)][:4] == ["a1", "b1", "a2", "b2"]
    # a count: the best candidate of each conversation before the second of any
    found = [_candidate("x1", "s1", 0, 1), _candidate("x2", "s1", 0, 2), _candidate("y1", "s2", 0, 3)]
    assert [c.message_id for c in compose(found, "count", 1)] == ["x1", "y1", "x2"]


def _evidence(author: str, text: str, when: datetime, sub: int = 0):
    from memory_query.agent.findings import Evidence, best_sentence
    from memory_query.agent.planner import content_tokens

    start, end, match = best_sentence(text, set(content_tokens("What did Caroline paint at the lake?")))
    return Evidence(f"m-{author}-{when:%m%d}", "c1", "S1", "D1:1", author, "user", when, text, start, end, match, sub, "main", "search")  # fmt: skip


def test_the_extractive_synthesizer_answers_about_the_person_asked_and_abstains_otherwise():
    from memory_query.agent.synthesizer import OfflineSynthesizer

    plan = make_plan("What did Caroline paint at the lake?", ASKED)
    plan.participants = frozenset({"caroline", "melanie"})
    melanie = _evidence("Melanie", "I painted a sunset at the lake last week.", datetime(2023, 5, 20))
    caroline = _evidence("Caroline", "Yesterday I painted the lake at dawn.", datetime(2023, 5, 10))
    draft = OfflineSynthesizer().synthesize(plan, [melanie, caroline])
    assert not draft.abstained and caroline.citation in draft.answer and melanie.citation not in draft.answer
    draft = OfflineSynthesizer().synthesize(plan, [melanie])  # only what Melanie said of herself
    assert draft.abstained and draft.gaps

"""Layer 2: the revision layer's rules on real-shaped inputs — slot filling, stated valid time, value
comparison, and the fact history (supersede, out of order, same-time conflict, negation, an adjudicator's
unrelated lane)."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import pytest

from memory_core.ontology.claims import SLOT_NAMES, SLOTS, slot_vocabulary_text
from memory_core.revision.history import ClaimView, Verdict, build_history, rule_verdict
from memory_core.revision.scan import fact_spans
from memory_core.revision.slot_rules import offline_claims
from memory_core.revision.slots import normalise_value, same_value, singular, subject_key
from memory_core.revision.valid_time import stated_valid_from

SAID = datetime(2024, 7, 15, 20, 0)


def facts(text: str, kind: str = "belief") -> set[tuple]:
    return {
        (c.subject, c.slot, c.qualifier, c.value, c.polarity, c.valid_from)
        for c in offline_claims(kind, text, SAID)
    }


@pytest.mark.parametrize(
    "text, expected",
    [
        ("I live in Portland with my wife Anna", {("speaker", "residence", "", "Portland", "affirmed", ""),
                                                  ("speaker", "relationship", "wife", "Anna", "affirmed", "")}),
        ("We finally moved to Seattle last week", {("speaker", "residence", "", "Seattle", "affirmed", "2024-07-08")}),
        ("I'm moving to Denver next month", {("speaker", "residence", "", "Denver", "affirmed", "2024-08-01")}),
        ("I work at Intel as a QA engineer", {("speaker", "workplace", "", "Intel", "affirmed", ""),
                                              ("speaker", "job_title", "", "QA engineer", "affirmed", "")}),
        ("I don't work at Intel anymore", {("speaker", "workplace", "", "Intel", "negated", "")}),
        ("I sold the Civic", {("speaker", "vehicle", "", "Civic", "negated", "")}),
        ("I drive a Tesla Model 3 now", {("speaker", "vehicle", "", "Tesla Model 3", "affirmed", "")}),
        ("We adopted a third cat", {("speaker", "possession", "cat", "3", "affirmed", "")}),
        ("I have three cats", {("speaker", "possession", "cat", "3", "affirmed", "")}),
        ("I've read three books this month", {("speaker", "count", "book", "3", "affirmed", "")}),
        ("I've accumulated enough points for a single free night's stay",
         {("speaker", "count", "night's stay", "1", "affirmed", "")}),
        ("My favourite food is ramen these days", {("speaker", "favourite", "food", "ramen", "affirmed", "")}),
        ("I prefer tea now", {("speaker", "preference", "drink", "tea", "affirmed", "")}),
        ("I go to the gym on Tuesdays and Thursdays now",
         {("speaker", "schedule", "gym day", "Tuesdays and Thursdays", "affirmed", ""),
          ("speaker", "schedule", "gym frequency", "2 times a week", "affirmed", "")}),
        ("I need to be done before I head to the gym, which is usually at 6:00 pm",
         {("speaker", "schedule", "gym time", "6:00 pm", "affirmed", "")}),
        ("my gym sessions, which I usually go to at 7:00 pm on Mondays, Wednesdays, and Fridays",
         {("speaker", "schedule", "gym time", "7:00 pm", "affirmed", ""),
          ("speaker", "schedule", "gym day", "Mondays, Wednesdays and Fridays", "affirmed", ""),
          ("speaker", "schedule", "gym frequency", "3 times a week", "affirmed", "")}),
        ("I've been consistent with my gym routine - four times a week",
         {("speaker", "schedule", "gym frequency", "four times a week", "affirmed", "")}),
        ("I can only run in the evenings", {("speaker", "schedule", "running time", "evenings", "affirmed", "")}),
        ("I've had my Canon EOS 80D with me on five trips now", {("speaker", "count", "trip", "5", "affirmed", "")}),
        ("My sister lives in Denver", {("speaker's sister", "residence", "", "Denver", "affirmed", "")}),
        ("My half marathon is on May 5", {("speaker", "plan_date", "half marathon", "2025-05-05", "affirmed", "")}),
        ("I hung the 'Ethereal Dreams' painting in my bedroom",
         {("speaker", "location", "ethereal dreams", "bedroom", "affirmed", "")}),
        ("I'm 32 years old", {("speaker", "age", "", "32", "affirmed", "")}),
        ("I'm vegetarian now", {("speaker", "diet", "", "vegetarian", "affirmed", "")}),
    ],
)  # fmt: skip
def test_offline_slot_rules_fill_what_a_statement_sets(text, expected):
    assert facts(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I want to live in Paris",  # a wish
        "If I lived in Paris I would be happy",  # a condition
        "Do you live in Paris?",  # a question
        "I have a lot of questions",  # not a count of things owned
        "I have two weeks off",  # a duration, not a possession
        "I'm a big fan of jazz",  # not a job title
        "I've taken my camera on quite a few adventures",  # a vague amount is not a count
    ],
)
def test_offline_slot_rules_set_nothing_from_wishes_conditions_and_vague_words(text):
    assert facts(text) == set()


# Held-out phrasings of the same slots, in other words than the rule table above, written without reading
# the benchmark data. HELD_OUT was written before any rule was changed: the rules of slots/v1 read 32 of its
# 37 sentences right. slots/v2 made four general fixes it showed wanted ("a nurse at X" names the workplace,
# "hit the gym", a place phrase between an activity and its time, "I turned 40 last month" dates the age), so
# HELD_OUT is in-sample for those now: 36 of 37. FRESH was written after the fixes and run once: 8 of 10.
# A miss is an xfail(strict) that says why, so a rule that starts to read it turns the test red.
A = "affirmed"
S = "speaker"


def _miss(text: str, why: str):
    return pytest.param(text, marks=pytest.mark.xfail(strict=True, reason=why), id=text)


HELD_OUT = {
    "These days I'm based in Chicago": {(S, "residence", "", "Chicago", A, "")},
    "I moved to Austin in 2021": {(S, "residence", "", "Austin", A, "2021-01-01")},
    "We relocated to Boston two months ago": {(S, "residence", "", "Boston", A, "2024-05-01")},
    "I've been living in Berlin since March": {(S, "residence", "", "Berlin", A, "2024-03-01")},
    "My brother lives in Toronto": {("speaker's brother", "residence", "", "Toronto", A, "")},
    "I live in Lyon now": {(S, "residence", "", "Lyon", A, "")},
    "I'm employed at Google": {(S, "workplace", "", "Google", A, "")},
    "I got a job at Microsoft last week": {(S, "workplace", "", "Microsoft", A, "2024-07-08")},
    "I quit my job at Oracle": {(S, "workplace", "", "Oracle", "negated", "")},
    "I'm a software engineer at Spotify": {(S, "workplace", "", "Spotify", A, ""),
                                           (S, "job_title", "", "software engineer", A, "")},
    "I work as a nurse": {(S, "job_title", "", "nurse", A, "")},
    "I was promoted to senior manager": {(S, "job_title", "", "senior manager", A, "")},
    "I ride a Vespa to work": {(S, "vehicle", "", "Vespa", A, "")},
    "I just bought a Subaru Outback": {(S, "vehicle", "", "Subaru Outback", A, "")},
    "I got rid of my Ford Focus": {(S, "vehicle", "", "Ford Focus", "negated", "")},
    "I own four guitars": {(S, "possession", "guitar", "4", A, "")},
    "We have two dogs": {(S, "possession", "dog", "2", A, "")},
    "I got a second bike": {(S, "possession", "bike", "2", A, "")},
    "I've run six marathons so far": {(S, "count", "marathon", "6", A, "")},
    "I've finished seven books this year": {(S, "count", "book", "7", A, "")},
    "My favorite band is Radiohead": {(S, "favourite", "band", "Radiohead", A, "")},
    "My favourite movie is Alien": {(S, "favourite", "movie", "Alien", A, "")},
    "I prefer coffee these days": {(S, "preference", "drink", "coffee", A, "")},
    "I do yoga on Saturdays": {(S, "schedule", "yoga day", "Saturdays", A, "")},
    "I hit the gym three times a week": {(S, "schedule", "gym frequency", "three times a week", A, "")},
    "I usually work out at the gym around 5:30 am": {(S, "schedule", "gym time", "5:30 am", A, "")},
    "I go running on Sundays": {(S, "schedule", "running day", "Sundays", A, "")},
    "I'm vegan": {(S, "diet", "", "vegan", A, "")},
    "I've been on a keto diet since January": {(S, "diet", "", "keto", A, "2024-01-01")},
    "I turned 40 last month": {(S, "age", "", "40", A, "2024-06-01")},
    "My wife's name is Maria": {(S, "relationship", "wife", "Maria", A, "")},
    "My daughter Emma started school": {(S, "relationship", "daughter", "Emma", A, "")},
    "My wedding is on June 14": {(S, "plan_date", "wedding", "2025-06-14", A, "")},
    "I put the vase in the living room": {(S, "location", "vase", "living room", A, "")},
    "I'm from Glasgow originally": {(S, "hometown", "", "Glasgow", A, "")},
    "I'm studying at MIT": {(S, "school", "", "MIT", A, "")},
    "I'm engaged now": {(S, "relationship_status", "", "engaged", A, "")},
}  # fmt: skip
FRESH = {
    "I'm a barista at Blue Bottle": {(S, "workplace", "", "Blue Bottle", A, ""), (S, "job_title", "", "barista", A, "")},
    "I'm a graduate student at Stanford University": {(S, "school", "", "Stanford University", A, ""),
                                                      (S, "job_title", "", "graduate student", A, "")},
    "We hit the pool on weekends": {(S, "schedule", "swimming day", "weekends", A, "")},
    "I usually cycle to the office at 8 am": {(S, "schedule", "cycling time", "8 am", A, "")},
    "I turned 30 in May": {(S, "age", "", "30", A, "2024-05-01")},
    "I hit the gym every Monday": {(S, "schedule", "gym day", "Monday", A, "")},
    "My partner lives in Leeds": {("speaker's partner", "residence", "", "Leeds", A, "")},
    "I own a Kawasaki Ninja": {(S, "vehicle", "", "Kawasaki Ninja", A, "")},
    "I've climbed four mountains so far": {(S, "count", "mountain", "4", A, "")},
    "My favourite city is Kyoto": {(S, "favourite", "city", "Kyoto", A, "")},
}  # fmt: skip
MISSES = {
    "I'm studying at MIT": "a school named by an acronym alone (no University / College / Institute word)",
    "I turned 30 in May": "the age rule's look-ahead admits no 'in <month>' after the number",
    "I own a Kawasaki Ninja": "'own' is no vehicle verb, and Kawasaki is not in the brand list",
}


@pytest.mark.parametrize(
    "text",
    [_miss(t, MISSES[t]) if t in MISSES else pytest.param(t, id=t) for t in {**HELD_OUT, **FRESH}],
)
def test_held_out_phrasings_fill_the_same_slots(text):
    assert facts(text) == {**HELD_OUT, **FRESH}[text]


@pytest.mark.parametrize(
    "text",
    [
        "I'd love to move to Rome someday",
        "Would you live in Oslo?",
        "If I worked at Apple I'd be rich",
        "I have a few ideas",
        "I have three hours until the meeting",
        "I'm really into hiking",
    ],
)
def test_held_out_wishes_questions_and_vague_words_set_nothing(text):
    assert facts(text) == set()


def test_a_fact_inside_a_question_is_read_from_its_tail_only():
    text = (
        "Can you set reminders for my gym sessions, which I usually go to at 7:00 pm? Do you live in Paris?"
    )
    [(start, end)] = fact_spans(text)
    assert text[start:end] == "my gym sessions, which I usually go to at 7:00 pm"
    assert fact_spans("What do you think? I live in Porto now.") == [(19, 38)]


def test_names_and_assistant_messages_carry_no_claims():
    assert offline_claims("entity", "I live in Portland", SAID) == []
    assert offline_claims("belief", "I live in Portland", SAID, is_person=False) == []


def test_every_slot_is_in_the_vocabulary_the_prompt_states():
    text = slot_vocabulary_text()
    assert set(SLOTS) == set(SLOT_NAMES) and all(f"- {name}:" in text for name in SLOT_NAMES)


@pytest.mark.parametrize(
    "text, said, expected",
    [
        ("I started there last week", SAID, date(2024, 7, 8)),
        ("we've lived here since March", SAID, date(2024, 3, 1)),
        ("since March", datetime(2024, 2, 10), date(2023, 3, 1)),  # March is ahead in February: last year's
        ("two months ago", SAID, date(2024, 5, 1)),
        ("on June 3, 2021", SAID, date(2021, 6, 3)),
        ("in 2019", SAID, date(2019, 1, 1)),
        ("moving next month", SAID, date(2024, 8, 1)),
        ("I live in Seattle now", SAID, None),
    ],
)
def test_stated_valid_time_resolves_against_when_it_was_said(text, said, expected):
    assert stated_valid_from(text, said) == expected


def test_values_compare_normalised():
    assert normalise_value("possession", "three") == "3" and normalise_value("count", "a third one") == "3"
    assert normalise_value("schedule", "7:00 PM on Mondays, and Wednesdays") == "7pm on monday wednesday"
    assert normalise_value("residence", "the Seattle now") == "seattle"
    assert (
        same_value("civic", "honda civic")
        and not same_value("2", "3")
        and not same_value("seattle", "portland")
    )
    assert singular("parties") == "party" and singular("night's stays") == "night's stay"


def test_subjects_resolve_to_the_author():
    assert subject_key("speaker", "user", "user") == ("user", "the user")
    assert subject_key("speaker", "Caroline", "user") == ("caroline", "Caroline")
    assert subject_key("Caroline", "Caroline", "user") == ("caroline", "Caroline")
    assert subject_key("speaker's sister", "Caroline", "user") == ("caroline's sister", "Caroline's sister")
    assert subject_key("Anna", "user", "user") == ("anna", "Anna")


# ------------------------------------------------------------------------------------------ history
WINDOW = timedelta(hours=24)


def claim(
    n: int, value: str, when: datetime, polarity="affirmed", cue=False, attribute="residence"
) -> ClaimView:
    return ClaimView(
        claim_id=f"claim-{n}", message_id=f"msg-{n}", concept_id=f"concept-{n}", subject="user",
        subject_label="the user", slot=attribute.split(":")[0], attribute=attribute, value=value,
        value_norm=normalise_value(attribute.split(":")[0], value), polarity=polarity, valid_from=when,
        spoken_at=when, text=f"I live in {value}", change_cue=cue,
    )  # fmt: skip


def rules_only(open_states, c):
    return rule_verdict(open_states, c, WINDOW) or Verdict("conflict", "rule", "same time")


def summary(states) -> list[tuple]:
    return [
        (s.value, s.status, s.valid_from.date(), s.valid_until.date() if s.valid_until else None)
        for s in states
    ]


JAN, MAR, JUL = datetime(2024, 1, 10), datetime(2024, 3, 20), datetime(2024, 7, 15)


def test_a_later_value_supersedes_the_open_state_citing_its_evidence():
    states = build_history([claim(1, "Portland", JAN), claim(2, "Seattle", JUL)], rules_only, WINDOW)
    assert summary(states) == [
        ("Portland", "superseded", JAN.date(), JUL.date()),
        ("Seattle", "current", JUL.date(), None),
    ]
    old, new = states
    assert old.superseded_by == new.state_key and old.closed_by.message_id == "msg-2"


def test_a_restatement_supports_the_open_state():
    states = build_history([claim(1, "Seattle", JAN), claim(2, "Seattle", JUL)], rules_only, WINDOW)
    assert summary(states) == [("Seattle", "current", JAN.date(), None)]
    assert [c.claim_id for c in states[0].claims] == ["claim-1", "claim-2"]


def test_a_claim_ingested_out_of_order_lands_in_its_place():
    # Seattle (July) and Portland (January) first, then a March claim told later
    late = build_history(
        [claim(2, "Seattle", JUL), claim(1, "Portland", JAN), claim(3, "Tacoma", MAR)], rules_only, WINDOW
    )
    assert summary(late) == [
        ("Portland", "superseded", JAN.date(), MAR.date()),
        ("Tacoma", "superseded", MAR.date(), JUL.date()),
        ("Seattle", "current", JUL.date(), None),
    ]


def test_same_time_different_values_without_a_cue_are_both_disputed():
    states = build_history(
        [claim(1, "Portland", JUL), claim(2, "Seattle", JUL + timedelta(minutes=3))], rules_only, WINDOW
    )
    assert [s.status for s in states] == ["disputed", "disputed"]
    a, b = states
    assert a.conflicts_with == [b.state_key] and b.conflicts_with == [a.state_key]


def test_same_time_with_a_change_cue_supersedes():
    states = build_history(
        [claim(1, "Portland", JUL), claim(2, "Seattle", JUL + timedelta(minutes=3), cue=True)],
        rules_only,
        WINDOW,
    )
    assert [s.status for s in states] == ["superseded", "current"]


def test_a_negation_ends_the_open_state():
    states = build_history(
        [claim(1, "Honda Civic", JAN, attribute="vehicle"), claim(2, "Civic", JUL, "negated", attribute="vehicle")],
        rules_only, WINDOW,
    )  # fmt: skip
    assert summary(states) == [("Honda Civic", "ended", JAN.date(), JUL.date())]
    assert states[0].closed_by.claim_id == "claim-2" and states[0].superseded_by is None


def test_an_adjudicator_may_keep_an_unrelated_value_in_a_lane_of_its_own():
    asked = []

    def adjudicator(open_states, c):
        asked.append(c.value)
        return rule_verdict(open_states, c, WINDOW) or Verdict("unrelated", "llm:test", "a city and a dorm")

    states = build_history(
        [claim(1, "Seattle", JUL), claim(2, "a dorm", JUL + timedelta(minutes=1))], adjudicator, WINDOW
    )
    assert asked == ["a dorm"]
    assert {(s.attribute, s.status) for s in states} == {
        ("residence", "current"),
        ("residence/dorm", "current"),
    }


def test_a_later_value_closes_both_sides_of_a_dispute():
    states = build_history(
        [claim(1, "Portland", JAN), claim(2, "Seattle", JAN + timedelta(minutes=5)), claim(3, "Tacoma", JUL)],
        rules_only,
        WINDOW,
    )
    assert [(s.value, s.status, s.valid_until.date() if s.valid_until else None) for s in states] == [
        ("Portland", "superseded", JUL.date()),
        ("Seattle", "superseded", JUL.date()),
        ("Tacoma", "current", None),
    ]
    assert states[0].conflicts_with == [states[1].state_key]  # once disputed, it says so


def test_a_later_restatement_settles_a_dispute():
    states = build_history(
        [
            claim(1, "Portland", JAN),
            claim(2, "Seattle", JAN + timedelta(minutes=5)),
            claim(3, "Seattle", JUL),
        ],
        rules_only,
        WINDOW,
    )
    assert [(s.value, s.status) for s in states] == [("Portland", "superseded"), ("Seattle", "current")]

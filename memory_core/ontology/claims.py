"""Claims and fact states (docs/architecture.md §3, §4.11–4.12): the revisable facts inside fact-bearing mentions.

A **claim** says that a subject's attribute (a *slot* of a fixed vocabulary, made specific by a qualifier
where the slot needs one) has a value, from some valid time on, with the evidence span it was read in. Per
(subject, slot key) the claims form a bi-temporal history of **FactStates**: a new value supersedes the open
state (its `valid_until` becomes the new state's `valid_from`), a value said at the same time as a different
one disputes it, and every version of a state keeps when memory recorded it and when it stopped believing
it. Contradiction is only ever looked for inside one (subject, slot key): two facts about different
attributes never retire each other.

`ClaimCandidate` is what a teacher returns inside a `ConceptCandidate` (strict: every field required, empty
is ""); the slot vocabulary below is the one the extraction prompt states and the offline slot rules fill.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import Field

from memory_core.ontology.strict import StrictBase

SlotName = Literal[
    "residence",
    "hometown",
    "workplace",
    "job_title",
    "school",
    "vehicle",
    "possession",
    "count",
    "favourite",
    "preference",
    "schedule",
    "diet",
    "relationship",
    "relationship_status",
    "plan_date",
    "location",
    "duration",
    "age",
]
ClaimPolarity = Literal["affirmed", "negated"]
ClaimStatus = Literal["active", "stale", "disputed", "rejected", "archived"]
FactStatus = Literal["current", "superseded", "ended", "disputed"]

SLOT_NAMES: tuple[str, ...] = get_args(SlotName)
CLAIM_STATUSES: tuple[str, ...] = get_args(ClaimStatus)
FACT_STATUSES: tuple[str, ...] = get_args(FactStatus)
#: claims that take part in a fact history (stale / rejected / archived ones are kept, cited, never current)
HISTORY_STATUSES: tuple[str, ...] = ("active", "disputed")

#: what each slot records and what its qualifier names ("" when it needs none). Every slot is single-valued
#: per (subject, slot, qualifier): a later value replaces an earlier one.
SLOTS: dict[str, tuple[str, str]] = {
    "residence": ("where the subject lives (city, country or home)", ""),
    "hometown": ("where the subject is from or grew up", ""),
    "workplace": ("the organisation the subject works for", ""),
    "job_title": ("the subject's job, role or title", ""),
    "school": ("the school or university the subject attends", ""),
    "vehicle": ("what the subject drives or rides", ""),
    "possession": ("how many of a thing the subject owns or has", "the thing, singular (cat, guitar)"),
    "count": ("how many times or items of an experience so far", "what is counted, singular (trip)"),
    "favourite": ("the subject's favourite of a category", "the category (food, band, movie)"),
    "preference": ("what the subject prefers in a category", "the category (drink, seat)"),
    "schedule": (
        "when the subject does a recurring activity, one part per claim",
        "the activity and the part: '<activity> day', '<activity> time' or '<activity> frequency' (gym time)",
    ),
    "diet": ("the subject's diet (vegan, vegetarian, keto)", ""),
    "relationship": ("the name of the subject's partner or relative in a role", "the role (wife, sister)"),
    "relationship_status": ("single, dating, engaged, married, divorced", ""),
    "plan_date": ("the date of something the subject plans", "the planned event (half marathon)"),
    "location": ("where a thing of the subject's is kept or hangs", "the thing (painting Ethereal Dreams)"),
    "duration": ("how long something has lasted so far", "what lasts (parents staying)"),
    "age": ("the subject's age in years", ""),
}
SPEAKER = "speaker"  # a claim's subject when it is the person speaking ("I", "my", "we")


class ClaimCandidate(StrictBase):
    """One revisable fact a concept candidate states (strict schema: every field required)."""

    subject: str = Field(
        description="who the fact is about: 'speaker' for the person speaking (I, my, we); else that person's "
        "name as written ('Anna'), or the speaker's relation when unnamed ('speaker's sister')"
    )
    slot: SlotName = Field(description="the attribute the fact sets, from the slot vocabulary")
    qualifier: str = Field(
        description="what the slot is about where it needs one (the thing owned or counted, the favourite's "
        "category, the scheduled activity, the relation, the planned event, the thing placed), lower case "
        "and singular; '' for slots that need none"
    )
    value: str = Field(
        description="the value the fact sets, as short as the text allows: 'Seattle', 'Amazon', 'senior "
        "engineer', 'Tesla Model 3', '3', 'sushi', 'Tuesdays and Thursdays', 'vegan', 'Anna', '2024-05-05'"
    )
    polarity: ClaimPolarity = Field(
        description="negated when the text says the fact stopped or is not true ('I sold the Civic', 'I don't "
        "work at Intel anymore'); else affirmed"
    )
    valid_from: str = Field(
        description="YYYY-MM-DD when the text says when the fact became true, resolved against the message "
        "time ('since March', 'last week', 'next month'); '' when it does not say"
    )


def slot_key(slot: str, qualifier: str = "") -> str:
    """The attribute a history is kept for: the slot, made specific by its qualifier ("possession:cat")."""
    return f"{slot}:{qualifier}" if qualifier else slot


def slot_vocabulary_text() -> str:
    """The vocabulary as the extraction prompt states it."""
    lines = []
    for name, (what, qualifier) in SLOTS.items():
        lines.append(f"  - {name}: {what}" + (f"; qualifier = {qualifier}" if qualifier else ""))
    return "\n".join(lines)

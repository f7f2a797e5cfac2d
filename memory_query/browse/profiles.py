"""Profiles: per subject (a speaker, a person they talk about, "the user's sister"), the facts memory holds
about them — per slot the value current now and the states before it with their valid times, each cited
(the `facts` tool's histories, grouped by subject). A slot with a long history shows its latest states; its
own page shows the whole of it, a page at a time."""

from __future__ import annotations

from sqlalchemy import func, select

from memory_core.store.schema import canonical_concepts
from memory_query.browse.memo import memoised
from memory_query.browse.models import Profile, SlotHistory, SubjectList, SubjectRow
from memory_query.fact_history import fact_history
from memory_query.reader import CorpusReader
from memory_query.tool_results import FactStateView, NotInHistory

SUBJECT_TYPES = ("entity", "person", "project")  # concept types a subject's own concept may have
STATES_SHOWN = 8  # latest states of a slot on the profile
STATES_PER_PAGE = 100  # states of a slot on its own page
EVIDENCE_SHOWN = 3  # evidence quotes per state
NOT_IN_HISTORY_SHOWN = 20


def _histories(reader: CorpusReader) -> dict[str, list[dict]]:
    """Every fact history of the corpus as memory believes it now, by subject key (plain dicts: a page turns
    into models only what it shows), kept while the stores are unchanged."""

    def build() -> dict[str, list[dict]]:
        grouped: dict[str, list[dict]] = {}
        for g in fact_history(reader):
            grouped.setdefault(g.get("subject_key") or g["subject"], []).append(g)
        return grouped

    return memoised(reader, "browse:fact_histories", ("source", "staging"), build)


def _subjects(reader: CorpusReader) -> dict[str, SubjectRow]:
    def build() -> dict[str, SubjectRow]:
        grouped = _histories(reader)
        concepts = _subject_concepts(reader, {hs[0]["subject"] for hs in grouped.values()})
        rows = {
            key: SubjectRow(
                subject=key,
                label=hs[0]["subject"],
                slots=len(hs),
                states=sum(len(h["states"]) for h in hs),
                current=sum(1 for h in hs if h["current"] is not None),
                concept_id=concepts.get(hs[0]["subject"].casefold()),
            )
            for key, hs in grouped.items()
        }
        return dict(sorted(rows.items(), key=lambda kv: (-kv[1].states, kv[1].label.casefold())))

    return memoised(reader, "browse:subjects", ("source", "staging"), build)


def _subject_concepts(reader: CorpusReader, labels: set[str]) -> dict[str, str]:
    """A live concept titled as the subject (an entity, person or project), by the label casefolded."""
    wanted = {label.casefold() for label in labels}
    k = canonical_concepts.c
    with reader.store.staging.connect() as conn:
        rows = conn.execute(
            select(func.lower(k.title), k.concept_id)
            .where(k.state.in_(("active", "weak")), k.type.in_(SUBJECT_TYPES))
            .order_by(k.support_count.desc())
        ).all()
    out: dict[str, str] = {}
    for title, concept_id in rows:
        if title in wanted:
            out.setdefault(title, concept_id)
    return out


def warm(reader: CorpusReader) -> None:
    """Derive the subjects ahead of the first page that needs them."""
    _subjects(reader)


def subject_list(reader: CorpusReader) -> SubjectList:
    """The subjects memory holds facts about, the most facts first."""
    return SubjectList(corpus=reader.store.name, rows=list(_subjects(reader).values()))


def profile(reader: CorpusReader, subject: str, slot: str | None = None, offset: int = 0) -> Profile | None:
    """One subject's facts: per slot (current ones first) its value now and its latest states; with `slot`,
    that slot alone, `STATES_PER_PAGE` states from `offset` (0: the latest). None when memory holds no fact
    about `subject` (its key), or no such slot of it."""
    row = _subjects(reader).get(subject)
    if row is None:
        return None
    groups = _histories(reader)[subject]
    if slot is not None:
        groups = [g for g in groups if g["slot"] == slot]
        if not groups:
            return None
        views = [_slot(groups[0], STATES_PER_PAGE, max(0, offset))]
    else:
        views = [_slot(g, STATES_SHOWN, 0) for g in groups]
        views.sort(key=lambda v: (v.current is None, v.slot))
    return Profile(corpus=reader.store.name, subject=row, slots=views, slot=slot)


def _slot(group: dict, size: int, offset: int) -> SlotHistory:
    """`size` states of a history, the latest `offset` of them left out, each with its first evidence."""
    states = group["states"]
    end = max(0, len(states) - offset)
    start = max(0, end - size)
    shown = states[start:end]
    return SlotHistory(
        slot=group["slot"],
        current=group["current"],
        states=[
            FactStateView.model_validate({**s, "evidence": s["evidence"][:EVIDENCE_SHOWN]}) for s in shown
        ],
        earlier=start,
        later=len(states) - end,
        evidence={s["fact_state_id"]: len(s["evidence"]) for s in shown},
        not_in_history=[
            NotInHistory.model_validate(n) for n in group["not_in_history"][:NOT_IN_HISTORY_SHOWN]
        ],
    )

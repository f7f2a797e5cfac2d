"""Profiles: per subject (a speaker, a person they talk about, "the user's sister"), the facts memory holds
about them — per slot the value current now and the states before it with their valid times, each cited
(the `facts` tool's histories, grouped by subject)."""

from __future__ import annotations

from sqlalchemy import func, select

from memory_core.store.schema import canonical_concepts
from memory_query.browse.memo import memoised
from memory_query.browse.models import Profile, SubjectList, SubjectRow
from memory_query.fact_history import fact_history
from memory_query.reader import CorpusReader
from memory_query.tool_results import FactHistory

SUBJECT_TYPES = ("entity", "person", "project")  # concept types a subject's own concept may have


def _histories(reader: CorpusReader) -> list[FactHistory]:
    """Every fact history of the corpus as memory believes it now (kept while the stores are unchanged)."""
    return memoised(
        reader, "browse:fact_histories", ("source", "staging"),
        lambda: [FactHistory.model_validate(g) for g in fact_history(reader)],
    )  # fmt: skip


def _subjects(reader: CorpusReader) -> dict[str, SubjectRow]:
    def build() -> dict[str, SubjectRow]:
        grouped: dict[str, list[FactHistory]] = {}
        for h in _histories(reader):
            grouped.setdefault(h.subject_key or h.subject, []).append(h)
        concepts = _subject_concepts(reader, {hs[0].subject for hs in grouped.values()})
        rows = {
            key: SubjectRow(
                subject=key,
                label=hs[0].subject,
                slots=len(hs),
                states=sum(len(h.states) for h in hs),
                current=sum(1 for h in hs if h.current is not None),
                concept_id=concepts.get(hs[0].subject.casefold()),
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


def subject_list(reader: CorpusReader) -> SubjectList:
    """The subjects memory holds facts about, the most facts first."""
    return SubjectList(corpus=reader.store.name, rows=list(_subjects(reader).values()))


def profile(reader: CorpusReader, subject: str) -> Profile | None:
    """One subject's facts per slot, current first; None when memory holds no fact about `subject` (its key)."""
    row = _subjects(reader).get(subject)
    if row is None:
        return None
    histories = [h for h in _histories(reader) if (h.subject_key or h.subject) == subject]
    histories.sort(key=lambda h: (h.current is None, h.slot))
    return Profile(corpus=reader.store.name, subject=row, histories=histories)

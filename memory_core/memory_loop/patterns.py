"""Broader concepts the memory loop lets facts support: instances of goals and habits, episodes of patterns.

Both read the loop's working memory (`SubjectFacts`: the live fact concepts of each subject with their
salient stems, conversations and time) and the retriever's concept vectors:

- `instance_target`: a fact that shares its subject and a content stem with a live goal or behavioral
  pattern, and is close to it (cosine ≥ `RouterRules.instance_similarity`), supports it as evidence
  ("Caroline applied to adoption agencies" → "Caroline wants to adopt a child").
- `judge_pattern`: a reflective candidate (a behavioral pattern or tension the extractor read into one
  phrasing) stands only on episodes — fact concepts of the same subject sharing a content stem, close
  enough (`pattern_support_similarity`) — from several conversations, and not when a later statement of
  the subject on the same content says it stopped (docs/architecture.md §8: several supporting episodes, cross-episode
  evidence, no contradiction with the temporal course). A single lucky phrasing stays a residual.
- `find_themes`: a pattern no phrasing stated, read off the episodes themselves - a content stem a person's
  facts share across several conversations ("Melanie often talks about painting"), under the same gate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory_core.lexical import tokenize
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.retriever import ConceptIndex
from memory_core.memory_loop.router import RouterRules
from memory_core.memory_loop.support import PatternJudgement, ceases, fact_subject, salient_stems, topic_stems
from memory_core.ontology.concepts import FACT_TYPES, ConceptHypothesis

MAX_EPISODES = 6  # episodes attached to a pattern when it is created
THEME_PHRASE = " often talks about "


@dataclass
class _Fact:
    type: str
    stems: frozenset[str]
    ceases: bool
    topics: frozenset[str] = frozenset()  # the stems without the verb's (`support.topic_stems`)


@dataclass
class SubjectFacts:
    """The live fact concepts of each subject, with what the loop matches instances and episodes on."""

    by_subject: dict[str, dict[str, _Fact]] = field(default_factory=dict)
    # (subject, stem) → its facts by type, and each fact's first-seen order: `related` looks up the facts
    # sharing a stem instead of scanning all of a subject's (the user's own facts grow with the corpus: the
    # scan made consolidation quadratic, 1.32 as growth exponent from 10k to 30k messages), and an instance
    # looks only at goals and habits among them (`instance_target` had filtered them all per fact)
    by_stem: dict[tuple[str, str], dict[str, set[str]]] = field(default_factory=dict)
    _order: dict[str, int] = field(default_factory=dict)
    # (subject, stem) → the concept-index rows of its indexed facts, made on first use and dropped when a fact
    # of that stem changes: a held reflective candidate looks for episodes among every fact sharing a stem
    # with it, and at 1M messages (one subject, ~80k facts, ~180k candidates) listing and sorting them
    # per candidate was most of the held candidates' 1,195 s
    _rows: dict[tuple[str, str], np.ndarray] = field(default_factory=dict, compare=False, repr=False)

    def add(self, concept: ConceptHypothesis) -> None:
        if concept.type not in FACT_TYPES:
            return
        subject, cid = fact_subject(concept.title), concept.concept_id
        facts = self.by_subject.setdefault(subject, {})
        text = f"{concept.title} {concept.description}"
        old = facts.get(cid)
        for stem in old.stems if old is not None else ():
            self.by_stem[(subject, stem)][old.type].discard(cid)
            self._rows.pop((subject, stem), None)
        fact = _Fact(concept.type, salient_stems(concept.title), ceases(text), topic_stems(concept.title))
        facts[cid] = fact
        self._order.setdefault(cid, len(self._order))
        for stem in fact.stems:
            self.by_stem.setdefault((subject, stem), {}).setdefault(fact.type, set()).add(cid)
            self._rows.pop((subject, stem), None)

    def related(
        self, subject: str, stems: frozenset[str], exclude: str = "", types: tuple[str, ...] | None = None
    ) -> list[str]:
        """Fact concepts of `subject` (of `types`, or any) sharing a content stem with `stems`, in the order
        they were added."""
        hits: set[str] = set()
        for stem in stems:
            typed = self.by_stem.get((subject, stem), {})
            for type_ in typed if types is None else types:
                hits |= typed.get(type_, set())
        hits.discard(exclude)
        return sorted(hits, key=self._order.__getitem__)

    def related_rows(self, subject: str, stems: frozenset[str], index: ConceptIndex) -> np.ndarray:
        """The index rows of the indexed fact concepts of `subject` sharing a content stem with `stems`
        (`related`'s concepts, as rows, ascending). A row stays a concept's, and a fact enters the index
        just before it is first added here (`LoopMemory.load`, `apply`), so a kept list is good until a fact
        of its stem changes, and ascending rows are `related`'s first-seen order: gathered in it, the
        product gives the floats the per-fact lookups gave (a product's floats depend on a row's place)."""
        parts = []
        for stem in stems:
            rows = self._rows.get((subject, stem))
            if rows is None:
                typed = self.by_stem.get((subject, stem), {}).values()
                ids = (c for cids in typed for c in cids if c in index)
                rows = self._rows[(subject, stem)] = np.sort(
                    np.fromiter(map(index.row_of, ids), dtype=np.int64)
                )
            parts.append(rows)
        if len(parts) < 2:
            return parts[0] if parts else np.zeros(0, dtype=np.int64)
        union = np.zeros(len(index), dtype=bool)  # a mask over every row: cheaper than sorting the parts
        for rows in parts:
            union[rows] = True
        return np.flatnonzero(union)

    def fact(self, subject: str, cid: str) -> _Fact:
        return self.by_subject[subject][cid]


def _cosines(index: ConceptIndex, vector: np.ndarray, ids: list[str]) -> dict[str, float]:
    if not ids:
        return {}
    rows = [index.row_of(c) for c in ids]
    return dict(zip(ids, (index.matrix[rows] @ np.asarray(vector, dtype=np.float32)).tolist(), strict=True))


def instance_target(
    facts: SubjectFacts,
    index: ConceptIndex,
    cand: Candidate,
    vector: np.ndarray,
    own: str,
    rules: RouterRules,
) -> tuple[str, float] | None:
    """(broader concept, cosine) the fact `cand` (now evidence of `own`) supports as an instance, or None."""
    subject, stems = fact_subject(cand.canonical_title), salient_stems(cand.canonical_title)
    ids = [c for c in facts.related(subject, stems, exclude=own, types=rules.instance_types) if c in index]
    sims = _cosines(index, vector, ids)
    best = max(sims.items(), key=lambda kv: (kv[1], kv[0]), default=None)
    return best if best is not None and best[1] >= rules.instance_similarity else None


def close_facts(
    facts: SubjectFacts,
    index: ConceptIndex,
    subject: str,
    stems: frozenset[str],
    vector: np.ndarray,
    threshold: float,
) -> list[str]:
    """The facts of `subject` sharing a content stem with `stems` whose cosine to `vector` is at least
    `threshold`, closest first (ties by id): one gather and one product over their kept rows."""
    rows = facts.related_rows(subject, stems, index)
    if not len(rows):
        return []
    sims = (index.matrix[rows] @ np.asarray(vector, dtype=np.float32)).astype(np.float64)
    near = np.flatnonzero(sims >= threshold)  # compared as the Python floats of the per-fact path were
    by_id = {index.id_at(int(rows[i])): float(sims[i]) for i in near}
    return sorted(by_id, key=lambda c: (-by_id[c], c))


def judge_pattern(
    facts: SubjectFacts,
    index: ConceptIndex,
    concepts: dict[str, ConceptHypothesis],
    cand: Candidate,
    vector: np.ndarray,
    rules: RouterRules,
) -> PatternJudgement:
    """Whether a reflective candidate stands on episodes from several conversations, and is not
    contradicted by a statement of the same subject on the same content, made after its last episode,
    that it stopped ("Melanie quit pottery" after "Melanie does pottery every week")."""
    subject, title = fact_subject(cand.canonical_title), cand.canonical_title
    judgement = PatternJudgement(conversations={cand.conversation_id})
    close = close_facts(facts, index, subject, salient_stems(title), vector, rules.pattern_support_similarity)
    stopped = [c for c in close if facts.fact(subject, c).ceases]
    for cid in (c for c in close if c not in stopped):
        if len(judgement.episodes) < MAX_EPISODES:
            judgement.episodes.append(cid)
            judgement.conversations |= index.conversations_of(cid)
    latest = max(
        [_naive(cand.message_created_at), *(_naive(concepts[c].last_seen) for c in judgement.episodes)]
    )
    if not ceases(f"{title} {cand.description}"):  # a habit told as past ("used to ...") is not contradicted
        later = [c for c in stopped if _naive(concepts[c].first_seen) > latest]
        judgement.contradicted_by = later[0] if later else ""
    return judgement


def _naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)


@dataclass
class Theme:
    """What a subject keeps coming back to: a content stem shared by facts of theirs in several
    conversations ("painting" in four of Melanie's), with no later statement that it stopped."""

    subject: str  # as the titles write it ("Melanie", "The user")
    stem: str
    word: str  # the stem as the subject's facts spell it, an -ing form when there is one
    episodes: list[str]

    @property
    def title(self) -> str:
        return f"{self.subject}{THEME_PHRASE}{self.word}"


def find_themes(
    facts: SubjectFacts,
    index: ConceptIndex,
    concepts: dict[str, ConceptHypothesis],
    rules: RouterRules,
    excluded_stems: set[str],
) -> list[Theme]:
    """Recurring subjects of each person's facts (patterns no single phrasing stated): a stem in at least
    `theme_min_episodes` facts from `theme_min_conversations` conversations, not in more than
    `theme_max_share` of the person's facts (that is everything they say), not a participant's name."""
    themes = []
    for _subject, by_id in sorted(facts.by_subject.items()):
        live = [
            c
            for c in by_id
            if c in index
            and c in concepts
            and concepts[c].type in FACT_TYPES
            and THEME_PHRASE not in concepts[c].title
        ]
        if len(live) < rules.theme_min_episodes:
            continue
        by_stem: dict[str, list[str]] = {}
        for cid in live:
            for stem in by_id[cid].topics:
                by_stem.setdefault(stem, []).append(cid)
        # a pattern the person stated (and the episodes bore out) already says what it keeps coming back to
        stated = {st for c in live if concepts[c].type in rules.reflective_types for st in by_id[c].stems}
        taken: list[set[str]] = []
        for stem, cids in sorted(by_stem.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            if stem in excluded_stems or stem in stated or len(cids) < rules.theme_min_episodes:
                continue
            if any(len(set(cids) & t) >= 0.8 * len(cids) for t in taken):
                continue  # "health" after "mental": the same facts, one theme
            if len(cids) > max(rules.theme_min_episodes, rules.theme_max_share * len(live)):
                continue
            conversations = set().union(*(index.conversations_of(c) for c in cids))
            if len(conversations) < rules.theme_min_conversations or _stopped(by_id, concepts, cids):
                continue
            taken.append(set(cids))
            ordered = sorted(cids, key=lambda c: (concepts[c].first_seen, c))
            themes.append(
                Theme(
                    _written_subject(concepts[ordered[0]].title),
                    stem,
                    _spelling(stem, concepts, ordered),
                    ordered,
                )
            )
    return themes


def _stopped(by_id: dict[str, _Fact], concepts: dict[str, ConceptHypothesis], cids: list[str]) -> bool:
    """The latest statement on the stem says it stopped ("Melanie quit pottery")."""
    latest = max(cids, key=lambda c: (_naive(concepts[c].last_seen), c))
    return by_id[latest].ceases


def _written_subject(title: str) -> str:
    words = title.split()
    head = " ".join(words[:2]) if words[:2] and words[0].lower() == "the" else words[0]
    return re.sub(r"['’]s$", "", head)


def _spelling(stem: str, concepts: dict[str, ConceptHypothesis], cids: list[str]) -> str:
    spellings: dict[str, int] = {}
    for cid in cids:
        for word in re.findall(r"[A-Za-z][\w'-]*", concepts[cid].title):
            if tokenize(word) == [stem]:
                spellings[word.lower() if not word.isupper() else word] = spellings.get(word, 0) + 1
    if not spellings:
        return stem
    ing = [w for w in spellings if w.endswith("ing")]
    return max(ing or spellings, key=lambda w: (spellings[w], -len(w), w))

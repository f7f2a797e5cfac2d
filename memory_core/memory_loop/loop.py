"""The Concept Memory Loop: consolidate a corpus's unconsolidated mentions into canonical concepts.

Mentions are processed in chronological order (message time, then message, then span), each against the
concepts as they stand after every earlier decision (progressive alignment against the evolving
consensus): retrieve → route → apply. The loop holds the live concepts as `ConceptHypothesis` objects (read
and written through the concept store) and applies each decision's patch to them. Decisions are written per
batch in one staging transaction: the ActionLog rows, the new/changed concepts, `concept_evidence` rows,
the hard link `mentions.consolidated_id` and the residuals. A mention is done once it is linked or has a memory-loop
residual, so a rerun touches only new mentions and a crashed run resumes at the first unwritten batch. (A
concept row holding many spans is rewritten only once its evidence doubled, and at the run's end: a crashed
run's lagging rows, listed in `concept_rows_behind`, are rebuilt from the ActionLog by the next writer of
concepts - `apply.ROW_DEFER_MIN_SPANS`, `concepts/rows_behind.py`.)

The loop also knows who takes part in each conversation (message authors): a candidate only meets concepts
evidenced in conversations sharing a participant with its own (one corpus may hold several people's
histories). A concept whose key ("{title}: {description}") changes in a batch - created under a canonical
title or with a usage context, or refined - is indexed by the candidate's vector until the batch ends, then
all such keys are embedded in one call.

Two kinds of concept stand on more than one statement. A fact that is an instance of a goal or habit of its
subject also supports it as evidence (`patterns.instance_target`). A reflective candidate (a behavioral
pattern, a tension) is held to the end of the run and created only when episodes of it in several
conversations support it and no later statement says it stopped (`patterns.judge_pattern`); its episodes
become its evidence. A single phrasing stays a residual (`reflective_unsupported`), judged again by the next
run that brings new mentions. Working state: `memory.LoopMemory`; writing decisions: `apply`.

A run over tables exactly as the last run of the same code and configuration left them is a fixed point
(nothing pending, relations resolved, no row behind): it loads nothing (the counters of `LOOP_TABLES` at the
last run's end are kept, memory_core.store.memo, and no mention is pending).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from sqlalchemy import Select, and_, exists, func, select

import memory_core.concepts
import memory_core.lexical
import memory_core.memory_loop
import memory_core.ontology
from memory_core.blas import single_threaded_blas
from memory_core.concepts import action_log as log
from memory_core.concepts.names import normalise_name
from memory_core.concepts.patches import concept_from_patch
from memory_core.concepts.policy import ConceptPolicy
from memory_core.concepts.rows_behind import repair_rows_behind
from memory_core.embeddings.base import Embedder, l2_normalise
from memory_core.ids import stable_uuid
from memory_core.lexical import tokenize
from memory_core.memory_loop.adjudication import Adjudicator
from memory_core.memory_loop.apply import (
    ACTOR,
    HELD_REASONS,
    STAGE,
    Batch,
    apply,
    flush,
    support,
    support_broader,
    write_lagging,
)
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.memory import LoopMemory
from memory_core.memory_loop.patches import theme_patch
from memory_core.memory_loop.patterns import find_themes, judge_pattern
from memory_core.memory_loop.relations import derive_about, resolve_relations
from memory_core.memory_loop.report import LoopReport
from memory_core.memory_loop.retriever import RetrieverWeights
from memory_core.memory_loop.router import Decision, Router, RouterRules
from memory_core.memory_loop.summaries import usage_context
from memory_core.ontology.concepts import (
    LIVE_STATES,
    NAME_TYPES,
)
from memory_core.ontology.titles import is_theme_title
from memory_core.progress import Progress
from memory_core.store import memo
from memory_core.store import schema as store_schema
from memory_core.store.db import CorpusStore, utcnow
from memory_core.store.schema import (
    canonical_concepts,
    concept_rows_behind,
    mentions,
    messages,
    residuals,
    segments,
)

_IN_CHUNK = 500
# what a run reads and writes (a write to any of them is a new run's work)
# `residuals` is not among them: it holds other stages' rows too (topics and domains rewrite theirs after the
# loop), and of the loop's own only what is pending matters, which a kept run checks directly (`_any_pending`)
LOOP_TABLES = (
    ("source", "messages"),
    *(
        ("staging", t)
        for t in (
            "mentions", "segments", "canonical_concepts", "concept_evidence", "concept_rows_behind", "action_log",
        )
    ),
)  # fmt: skip
_MEMO = "memory_loop"


@dataclass
class LoopConfig:
    rules: RouterRules = field(default_factory=RouterRules)
    weights: RetrieverWeights = field(default_factory=RetrieverWeights)
    policy: ConceptPolicy = field(default_factory=ConceptPolicy)
    batch_size: int = 256


def _chunks(items: list, size: int = _IN_CHUNK):
    for i in range(0, len(items), size):
        yield items[i : i + size]


def _pending_query() -> Select:
    """Mentions routed to no concept and left as no residual of the loop, in the order they are routed."""
    done = exists().where(and_(residuals.c.stage == STAGE, residuals.c.mention_id == mentions.c.mention_id))
    return (
        select(mentions.c.mention_id)
        .where(mentions.c.consolidated_id.is_(None), ~done)
        .order_by(
            mentions.c.message_created_at,
            mentions.c.message_id,
            mentions.c.span_start,
            mentions.c.span_end,
            mentions.c.mention_id,
        )
    )


def _any_pending(store: CorpusStore) -> bool:
    with store.staging.connect() as conn:
        return conn.execute(_pending_query().limit(1)).first() is not None


def _pending_ids(store: CorpusStore) -> list[str]:
    with store.staging.connect() as conn:
        return list(conn.execute(_pending_query()).scalars())


def _held_ids(store: CorpusStore) -> list[str]:
    """Mentions an earlier run left as unsupported reflective residuals (judged again with new evidence)."""
    with store.staging.connect() as conn:
        return list(
            conn.execute(
                select(residuals.c.mention_id)
                .where(residuals.c.stage == STAGE, residuals.c.reason_code.in_(HELD_REASONS))
                .distinct()
            ).scalars()
        )


def _in_time_order(store: CorpusStore, ids: list[str]) -> list[str]:
    if not ids:
        return []
    wanted, out = set(ids), []
    with store.staging.connect() as conn:
        for r in conn.execute(
            select(mentions.c.mention_id).order_by(
                mentions.c.message_created_at, mentions.c.message_id, mentions.c.span_start,
                mentions.c.span_end, mentions.c.mention_id,
            )
        ):  # fmt: skip
            if r.mention_id in wanted:
                out.append(r.mention_id)
    return out


def _load_batch(store: CorpusStore, ids: list[str]) -> tuple[list[Candidate], dict[str, str], set[str]]:
    with store.staging.connect() as conn:
        rows = {
            r.mention_id: Candidate.from_row(r)
            for r in conn.execute(select(mentions).where(mentions.c.mention_id.in_(ids)))
        }
        seg_ids = list({c.segment_id for c in rows.values()})
        live = set(
            conn.execute(
                select(segments.c.segment_id).where(
                    segments.c.segment_id.in_(seg_ids), segments.c.superseded_at.is_(None)
                )
            ).scalars()
        )
    cands = [rows[i] for i in ids if i in rows]
    with store.source.connect() as conn:
        texts = {
            r.message_id: r.text
            for r in conn.execute(
                select(messages.c.message_id, messages.c.text).where(
                    messages.c.message_id.in_(list({c.message_id for c in cands}))
                )
            )
        }
    return cands, texts, live


def consolidate(
    store: CorpusStore,
    embedder: Embedder,
    config: LoopConfig | None = None,
    run_id: str | None = None,
    adjudicator: Adjudicator | None = None,
    log_fn: Callable[[str], None] | None = None,
) -> LoopReport:
    """Consolidate every mention not yet linked or rejected. The caller holds the corpus write lock."""
    config = config or LoopConfig()
    code = memo.code_digest(
        [
            memory_core.memory_loop,
            memory_core.concepts,
            memory_core.ontology,
            memory_core.lexical,
            store_schema,
        ],
        config,
    )
    if memo.kept(store, _MEMO, memo.tables_key(store, LOOP_TABLES, code)) is not None and not _any_pending(
        store
    ):
        return _unchanged(store, run_id)
    with single_threaded_blas():  # tens of thousands of small products: see `blas`
        report = _consolidate(store, embedder, config, run_id, adjudicator, log_fn)
    ended = memo.tables_key(store, LOOP_TABLES, code)  # before the look: a write after it is another key
    if _at_rest(store):  # (a mention written beside the lock while it ran is the next run's work)
        memo.keep(store, _MEMO, ended, {"concepts": report.concepts_after})
    return report


def _at_rest(store: CorpusStore) -> bool:
    """Nothing pending and no row behind the log: what a fixed point is, checked rather than assumed."""
    with store.staging.connect() as conn:
        behind = conn.execute(select(concept_rows_behind.c.concept_id).limit(1)).first()
    return behind is None and not _any_pending(store)


def _unchanged(store: CorpusStore, run_id: str | None) -> LoopReport:
    started = time.perf_counter()
    with store.staging.connect() as conn:
        live = conn.execute(
            select(func.count()).where(canonical_concepts.c.state.in_(LIVE_STATES))
        ).scalar_one()
    report = LoopReport(run_id=run_id or uuid.uuid4().hex, concepts_before=live, concepts_after=live)
    report.unchanged_input = True
    report.seconds = time.perf_counter() - started
    return report


def _consolidate(
    store: CorpusStore,
    embedder: Embedder,
    config: LoopConfig,
    run_id: str | None,
    adjudicator: Adjudicator | None,
    log_fn: Callable[[str], None] | None,
) -> LoopReport:
    started = time.perf_counter()
    report = LoopReport(run_id=run_id or uuid.uuid4().hex)
    report.rows_repaired = repair_rows_behind(store)  # rows a dead run had not written yet
    mem = LoopMemory(store, embedder, config, report)
    mem.load()
    router = Router(config.rules, adjudicator)
    pending = _pending_ids(store)
    # reflective candidates left unsupported by an earlier run are judged again when new evidence arrives
    reheld = _held_ids(store) if pending else []
    pending = _in_time_order(store, pending + reheld)
    report.pending = len(pending)
    rejected_vectors: list[np.ndarray] = []
    held: list[tuple[Candidate, np.ndarray]] = []
    themes: list[tuple[Candidate, np.ndarray]] = []
    progress = Progress("consolidation", "mentions routed", len(pending))
    for i, ids in enumerate(_chunks(pending, config.batch_size)):
        cands, texts, live = _load_batch(store, ids)
        vectors = mem.embed([c.embedding_key for c in cands])
        t0 = time.perf_counter()
        presims = mem.index.batch_similarities(vectors)
        report.retrieval_seconds += time.perf_counter() - t0
        batch = Batch(dropped_residuals=reheld if i == 0 else [])
        for cand, vec, row_sims in zip(cands, vectors, presims, strict=True):
            report.processed += 1
            decision, cand = _decide(
                mem, router, cand, texts.get(cand.message_id), cand.segment_id in live, vec, row_sims
            )
            if decision.action == "create" and cand.type in config.rules.reflective_types:
                held.append(
                    (cand, vec)
                )  # a pattern read into one phrasing: judged on its episodes at the end
                continue
            if decision.action == "create" and is_theme_title(cand.canonical_title, cand.type):
                themes.append((cand, vec))  # a theme: created at the end if it recurs across conversations
                continue
            if decision.action == "reject":
                rejected_vectors.append(vec)
            cid = apply(mem, batch, report.run_id, cand, vec, decision)
            if cid is not None:
                support_broader(mem, batch, report.run_id, cand, vec, cid)
        mem.refresh_vectors()
        flush(mem, batch)
        progress.step(len(ids))
        if log_fn:
            log_fn(f"{report.processed}/{report.pending} mentions, {len(mem.concepts)} concepts")
    progress.finish()
    held_started = time.perf_counter()
    rejected_vectors += _decide_held(mem, router, held, report.run_id)
    rejected_vectors += _decide_themes(mem, router, themes, report.run_id)
    report.held_seconds = time.perf_counter() - held_started
    if pending:
        _derive_themes(mem, report.run_id)
    resolve_relations(mem, report.run_id)
    derive_about(mem, report.run_id)
    write_lagging(mem)
    if rejected_vectors:
        report.residual_novelty = [
            round(1.0 - float(s), 4) for s in mem.index.max_similarity(np.stack(rejected_vectors))
        ]
    report.concepts_after = len(mem.concepts)
    report.approximate_batches = mem.index.approximate_looks
    report.seconds = time.perf_counter() - started
    return report


def _decide(
    mem: LoopMemory,
    router: Router,
    cand: Candidate,
    text: str | None,
    live: bool,
    vec: np.ndarray,
    row_sims,
    screen: bool = True,
) -> tuple[Decision, Candidate]:
    """Screen (unless screened already), retrieve and route one candidate (a name gets its usage context
    first)."""
    decision = router.screen(cand, text, live) if screen else None
    if decision is not None:
        return decision, cand
    if cand.type in NAME_TYPES:
        cand = replace(cand, usage=usage_context(text, cand.span_start, cand.span_end))
    t0 = time.perf_counter()
    hits = mem.index.retrieve(
        vec,
        [cand.title, *cand.aliases],
        cand.message_created_at,
        cand.segment_id,
        cand.conversation_id,
        presims=row_sims,
    )
    views = {h.concept_id: mem.view(h.concept_id, cand) for h in hits}
    decision = router.route(cand, hits, views)
    mem.report.retrieval_seconds += time.perf_counter() - t0
    return decision, cand


def _decide_held(
    mem: LoopMemory, router: Router, held: list[tuple[Candidate, np.ndarray]], run_id: str
) -> list[np.ndarray]:
    """The reflective candidates of the run, against everything the run learned: a restatement of a pattern
    that stands now attaches to it; a new one is created when episodes from several conversations support it
    and no later statement says it stopped (its episodes become its evidence), else it is a residual."""
    rules = mem.config.rules
    batch = Batch()
    rejected = []
    for (cand, vec), looked in zip(held, _held_looks(mem, held), strict=True):
        decision, cand = _decide(mem, router, cand, cand.surface, True, vec, looked, screen=False)
        if decision.action == "create":
            judgement = judge_pattern(mem.facts, mem.index, mem.concepts, cand, vec, rules)
            decision = _pattern_decision(judgement, rules, decision.scores)
        if decision.action == "reject":
            rejected.append(vec)
            mem.report.patterns["residual"] += 1
        cid = apply(mem, batch, run_id, cand, vec, decision)
        if decision.reason_code == "pattern_supported":
            mem.report.patterns["created"] += 1
            for episode in judgement.episodes:
                evidence = mem.evidence_of.get(episode, [])[:1]
                for e in evidence:
                    why = f"an episode of the pattern {mem.concepts[cid].title!r}"
                    support(mem, batch, run_id, cid, e, mem.concepts[episode].title, "pattern_episode", why)
    mem.refresh_vectors()
    flush(mem, batch)
    return rejected


def _decide_themes(
    mem: LoopMemory, router: Router, held: list[tuple[Candidate, np.ndarray]], run_id: str
) -> list[np.ndarray]:
    """The themes the run held (names in lower case no concept had: "camping"): one said in
    `theme_name_min_conversations` conversations becomes a concept, its first mention creating it and the
    others attaching by name; one said in fewer stays a residual (`theme_unsupported`), judged again by the
    next run that brings new mentions."""
    need = mem.config.rules.theme_name_min_conversations
    groups: dict[str, list[tuple[Candidate, np.ndarray]]] = {}
    for cand, vec in held:
        groups.setdefault(normalise_name(cand.canonical_title), []).append((cand, vec))
    batch = Batch()
    rejected = []
    for name, items in groups.items():
        conversations = {c.conversation_id for c, _ in items}
        if len(conversations) < need:
            for cand, vec in items:
                why = f"a theme is kept once said in {need} conversations; {name!r} is said in {len(conversations)}"
                decision = Decision(
                    "reject", None, "theme_unsupported", why, {"conversations": len(conversations)}
                )
                apply(mem, batch, run_id, cand, vec, decision)
                rejected.append(vec)
            mem.report.themes["residual"] += len(items)
            continue
        for cand, vec in items:
            decision, cand = _decide(mem, router, cand, cand.surface, True, vec, None, screen=False)
            apply(mem, batch, run_id, cand, vec, decision)
        mem.report.themes["named"] += 1
    mem.refresh_vectors()
    flush(mem, batch)
    return rejected


def _held_looks(mem: LoopMemory, held: list[tuple[Candidate, np.ndarray]]):
    """Each held candidate's shortlist look: exact, one at a time, while the index is exact; past
    `exact_up_to` concepts the inverted file's, a batch at a time (made lazily: the candidates before it
    create concepts and the look sees them as created since)."""
    if not mem.index.approximate_now():
        yield from (None for _ in held)
        return
    for start in range(0, len(held), mem.config.batch_size):
        yield from mem.index.batch_similarities(
            np.stack([v for _, v in held[start : start + mem.config.batch_size]])
        )


def _pattern_decision(judgement, rules: RouterRules, scores: dict) -> Decision:
    scores = {**scores, "episodes": judgement.episodes, "conversations": len(judgement.conversations)}
    if judgement.contradicted_by:
        return Decision(
            "reject", None, "reflective_contradicted",
            f"a later statement of the same subject says it stopped (concept {judgement.contradicted_by})", scores,
        )  # fmt: skip
    if judgement.stands(rules.pattern_min_episodes, rules.pattern_min_conversations):
        return Decision(
            "create", None, "pattern_supported",
            f"{len(judgement.episodes)} episodes in {len(judgement.conversations)} conversations support it", scores,
        )  # fmt: skip
    return Decision(
        "reject", None, "reflective_unsupported",
        f"a pattern needs {rules.pattern_min_episodes} episodes in {rules.pattern_min_conversations} conversations; "
        f"found {len(judgement.episodes)} in {len(judgement.conversations)}: a single phrasing stays a residual",
        scores,
    )  # fmt: skip


def _derive_themes(mem: LoopMemory, run_id: str) -> None:
    """Patterns read off the episodes themselves (`patterns.find_themes`): created once per person and
    content stem, each episode then supports it; a later run adds the episodes it brings."""
    rules = mem.config.rules
    if not rules.derive_themes:
        return
    names = {stem for people in mem.participants.values() for who in people for stem in tokenize(who or "")}
    batch = Batch()
    for theme in find_themes(mem.facts, mem.index, mem.concepts, rules, names):
        cid = stable_uuid("theme", mem.store.name, theme.subject.lower(), theme.stem)
        if cid not in mem.concepts:
            now = utcnow()
            first = mem.concepts[theme.episodes[0]].first_seen
            description = (
                f"{theme.title}: it comes back in {len(theme.episodes)} statements of several conversations."
            )
            patch = theme_patch(cid, theme.title, description, first, mem.config.policy, now)
            concept, _ = concept_from_patch(patch)
            mem.concepts[cid] = concept
            rows = [mem.index.row_of(e) for e in theme.episodes]
            mem.index_concept(cid, l2_normalise(mem.index.matrix[rows].mean(axis=0, keepdims=True))[0])
            mem.stale.add(cid)
            batch.new_concepts.append(cid)
            batch.records.append(
                log.ActionRecord(
                    action="create", actor=ACTOR, concept_id=cid, mention_id=None,
                    scores={"reason_code": "theme_supported", "episodes": theme.episodes},
                    rationale=f"{len(theme.episodes)} facts of {theme.subject} in several conversations share "
                    f"{theme.word!r}, and none after them says it stopped",
                    cited_message_ids=sorted({mem.evidence_of[e][0][1]["message_id"] for e in theme.episodes}),
                    prior_state=None, new_state=patch, run_id=run_id, recorded_at=now,
                )
            )  # fmt: skip
            mem.report.actions["create"] += 1
            mem.report.reasons["theme_supported"] += 1
            mem.report.patterns["themes"] += 1
        for episode in theme.episodes:
            for evidence in mem.evidence_of.get(episode, [])[:1]:
                why = f"an episode of the theme {theme.title!r}"
                support(mem, batch, run_id, cid, evidence, mem.concepts[episode].title, "theme_episode", why)
    mem.refresh_vectors()
    flush(mem, batch)

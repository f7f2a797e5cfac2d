"""Inputs of the topic-layer tests: separable synthetic embeddings, and a small chat corpus whose rounds are
about four clearly different subjects (so even the hashing embedder separates them)."""

from __future__ import annotations

import numpy as np

SUBJECTS = {
    "baking": "sourdough starter flour oven loaf crust bake dough yeast proofing baguette".split(),
    "hiking": "trail summit boots backpack ridge hike mountain campsite switchbacks altitude".split(),
    "investing": "portfolio stocks dividend index fund savings budget bonds brokerage retirement".split(),
    "guitar": "guitar chords fretboard strings strumming amplifier riff capo tuning pick".split(),
}
FILLER = "i really think that the was it and my so today we".split()


def blobs(n_per: int = 25, k: int = 3, dim: int = 32, noise: float = 0.08, seed: int = 0):
    """k well separated groups of unit vectors around orthogonal centres: (vectors, true labels)."""
    rng = np.random.default_rng(seed)
    centres = np.eye(dim, dtype=np.float32)[:k]
    vectors = np.concatenate([c + noise * rng.normal(size=(n_per, dim)) for c in centres]).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors, np.repeat(np.arange(k), n_per)


def _sentence(rng, words, n=7) -> str:
    picked = list(rng.choice(words, size=n)) + list(rng.choice(FILLER, size=3))
    rng.shuffle(picked)
    return " ".join(picked).capitalize() + "."


def subject_rows(rounds_per_subject: int = 12, seed: int = 7) -> list[dict]:
    """JSONL message rows: one conversation per subject, `rounds_per_subject` user/assistant rounds each."""
    rng = np.random.default_rng(seed)
    rows = []
    minute = 0
    for subject, words in SUBJECTS.items():
        parent = None
        for r in range(rounds_per_subject):
            for role, author in (("user", "dana"), ("assistant", "bot")):
                mid = f"{subject}-{r}-{role}"
                rows.append(
                    {
                        "id": mid,
                        "conversation_id": f"conv-{subject}",
                        "role": role,
                        "author": author,
                        "text": _sentence(rng, words),
                        "created_at": f"2024-03-{1 + minute // 1440:02d}T{(minute // 60) % 24:02d}:{minute % 60:02d}:00Z",
                        "parent_id": parent,
                    }
                )
                parent = mid
                minute += 1
    return rows


def build_subject_corpus(home, tmp_path, name: str = "subjects", rounds_per_subject: int = 12):
    """Register, ingest and segment the subject corpus: returns its CorpusStore (one segment per round)."""
    from memory_core.corpora import plan_corpora, register
    from memory_core.ingest.loader import ingest_file
    from memory_core.segments import build_segments
    from tests.conftest import write_jsonl

    path = write_jsonl(tmp_path / f"{name}.jsonl", subject_rows(rounds_per_subject))
    register(home, plan_corpora(name, path))
    store = home.corpus(name)
    ingest_file(store, path, "jsonl")
    build_segments(store)
    return store


def add_subject_concepts(store) -> dict[str, str]:
    """One entity concept per subject (named by its first word) with evidence in every segment of that subject,
    plus one belief per subject without evidence: {subject: entity concept id}."""
    from datetime import datetime

    from sqlalchemy import insert, select

    from memory_core.ids import stable_uuid
    from memory_core.store.schema import canonical_concepts, concept_evidence, segments

    now = datetime(2024, 3, 5)
    with store.staging.connect() as conn:
        segs = conn.execute(select(segments.c.segment_id, segments.c.text, segments.c.message_ids)).all()
    concept_rows, evidence_rows, ids = [], [], {}
    for subject, words in SUBJECTS.items():
        for kind, title, description in (
            ("entity", words[0].capitalize(), f"{words[0]} {words[1]} {words[2]}, mentioned by dana"),
            ("belief", f"Dana likes {subject}", f"Dana likes {words[3]} and {words[4]}."),
        ):
            cid = stable_uuid("concept", subject, kind)
            ids.setdefault(subject, cid)
            concept_rows.append(
                dict(
                    concept_id=cid,
                    title=title,
                    type=kind,
                    description=description,
                    state="active",
                    trust="stable",
                    confidence=0.8,
                    aliases=[],
                    evidence_spans=[],
                    relations=[],
                    revision_count=0,
                    support_count=1,
                    first_seen=now,
                    last_seen=now,
                    recorded_at=now,
                    merged_into=None,
                )
            )
        for seg in segs:
            if any(w in seg.text.lower() for w in words):
                evidence_rows.append(
                    dict(
                        concept_id=ids[subject],
                        mention_id=stable_uuid("m", subject, seg.segment_id),
                        message_id=seg.message_ids[0],
                        segment_id=seg.segment_id,
                        span_start=0,
                        span_end=1,
                        text="x",
                        confidence=0.8,
                        status="active",
                    )
                )
    with store.staging.begin() as conn:
        conn.execute(insert(canonical_concepts), concept_rows)
        conn.execute(insert(concept_evidence), evidence_rows)
    return ids

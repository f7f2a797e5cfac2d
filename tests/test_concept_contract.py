"""Layer 2: the title / description contract across the seam - the offline teacher's facts and names, the
Semantic Mapper's normalisation, and the memory loop's router (reason codes, fact matching, name summaries)."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta

import pytest
from sqlalchemy import select

from memory_core.embeddings import HashingEmbedder
from memory_core.extraction.mapper import map_extraction
from memory_core.extraction.offline_teacher import OfflineTeacher
from memory_core.extraction.stage import extract_corpus
from memory_core.extraction.teacher import MessageView, SegmentInput
from memory_core.ingest.loader import ingest_file
from memory_core.memory_loop import summaries
from memory_core.memory_loop.candidates import Candidate
from memory_core.memory_loop.loop import LoopConfig, consolidate
from memory_core.memory_loop.retriever import RetrievalHit
from memory_core.memory_loop.router import ConceptView, Router, RouterRules
from memory_core.memory_loop.valid_time import described_interval
from memory_core.ontology.concepts import MAX_FACT_TITLE_WORDS
from memory_core.ontology.extraction import CandidateSpan, ConceptCandidate, SegmentExtraction
from memory_core.ontology.titles import fact_title, title_noise
from memory_core.segments import build_segments
from memory_core.store.schema import action_log, canonical_concepts, mentions, residuals
from tests.loop_samples import concept

T0 = datetime(2023, 5, 8, 13, 56)


# ------------------------------------------------------------------------------------------------ titles
@pytest.mark.parametrize(
    "text, title",
    [
        ("Caroline went to a LGBTQ support group yesterday (7 May 2023).", "Caroline went to a LGBTQ support group"),
        ("Caroline went to a LGBTQ support group yesterday (7 May 2023", "Caroline went to a LGBTQ support group"),
        (  # a title an older extractor cut with "…"
            "Melanie loves camping trips with Melanie's fam, 'cause nature brings such peace…",
            "Melanie loves camping trips with Melanie's fam",
        ),
        ("Caroline started playing acoustic guitar about five years ago (2018).", "Caroline started playing acoustic guitar"),
        ("John got this amazing deal with a renowned outdoor gear company.", "John got this amazing deal"),
        ("Caroline thinks Caroline is ready to be a mom.", "Caroline is ready to be a mom"),
        ("When Dana moved to Denver in 2021", "Dana moved to Denver"),
        ("Melanie says last week was wild (the week before 9 August 2023).", "Melanie says last week was wild"),
        ("Melanie plays clarinet.", "Melanie plays clarinet"),
        ("Jon put so much into this.", "Jon put so much into this"),
        # never cut inside a number, a quoted title, an initial or an apposition
        ("The user finished in 1:58:12, which beat the user's goal by two minutes!", "The user finished in 1:58:12"),
        ("The user redeemed 40,000 points at a Marriott in Austin last month.", "The user redeemed 40,000 points at a Marriott in Austin"),
        ("Nadia and others discussed 'Pride, Prejudice, and Zombies' at length.", "Nadia and others discussed Pride Prejudice and Zombies at length"),
        ("The user's new manager, Alicia, started two weeks ago.", "The user's new manager Alicia started"),
        ("The user moved to the U.S. in 2019 with Dana.", "The user moved to the U.S. with Dana"),
        # a leading phrase is not the subject; a habit keeps its weekday
        ("Between Kafka and RabbitMQ, the user would rather go with the second one.", "The user would rather go with the second one"),
        ("The user volunteers at the shelter every other Saturday.", "The user volunteers at the shelter every other Saturday"),
        ("Caroline's dream is to create a safe and loving home for these kids.", "Caroline's dream is to create a safe and loving home"),
    ],
)  # fmt: skip
def test_fact_titles_are_short_dateless_and_whole(text, title):
    assert fact_title(text) == title
    assert fact_title(title) == title  # canonical: a good title stays as it is
    assert "…" not in title and "(" not in title and len(title.split()) <= MAX_FACT_TITLE_WORDS


@pytest.mark.parametrize(
    "title, type_, code",
    [
        ("it", "entity", "generic_title"),
        ("these things", "belief", "generic_title"),
        ("I think that we should really go and see the lake this summer", "entity", "sentence_title"),
        ("Caroline and others last chatted", "event", "boilerplate_title"),
        ("Here's one Melanie did", "event", "boilerplate_title"),
        ("John appreciates your support", "belief", "boilerplate_title"),
        ("Whenever Caroline hears this jam", "behavioral_pattern", "fragment_title"),
        ("Caroline finished", "event", "fragment_title"),
        ("Nate is always here for you", "behavioral_pattern", "fragment_title"),
        ("Caroline does-", "event", "fragment_title"),
        # not a well-formed statement: no subject a fact is about, a statement that stops early, an evaluation
        ("It made Caroline realize how important it is", "belief", "subjectless_title"),
        ("These figurines Melanie bought remind Melanie of family love", "event", "subjectless_title"),
        ("Seeing Caroline's mentee's face light up", "belief", "subjectless_title"),
        ("One thing the user knows", "belief", "subjectless_title"),
        ("Between Kestrel", "belief", "subjectless_title"),
        ("Caroline says it can be tough", "tension", "subjectless_title"),
        ("Makes Melanie feel like maybe Melanie should do it", "belief", "subjectless_title"),
        ("Melanie is planning a few", "goal", "dangling_title"),
        ("Caroline chose them", "event", "dangling_title"),
        ("Melanie shared Melanie's latest work from", "event", "dangling_title"),
        ("Melanie had a great time", "event", "vague_title"),
        ("Melanie feels the same way", "belief", "vague_title"),
        # facts, however long or short, are not noise
        ("Caroline is vegan", "belief", None),
        ("Melanie got hurt", "tension", None),
        ("The user finished in 1:58:12", "event", None),
        ("Theo spoiled Iris with lasagna", "event", None),
        ("The user has been painting a lot", "behavioral_pattern", None),
        ("Melanie plays clarinet", "behavioral_pattern", None),
        ("John wants to be known as a consistent performer", "goal", None),
        ("LGBTQ", "entity", None),
    ],
)
def test_title_noise_has_a_reason_code(title, type_, code):
    noise = title_noise(title, type_)
    assert (noise[0] if noise else None) == code
    if noise:
        assert title in noise[1] or type_ in noise[1]


def test_the_mapper_cuts_an_llm_fact_title_and_keeps_distinct_facts_apart():
    text = "I went hiking last week and I went hiking again yesterday."
    view = MessageView("m1", "id-1", "user", "Dana", True, text, 0, len(text), T0)
    seg = SegmentInput("seg-1", "conv-1", "chatgpt", (view,), ())

    def fact(quote, description):
        start = text.index(quote)
        return ConceptCandidate(
            title="Dana went hiking last week, which was a lot of fun and really relaxing too…",
            type="event",
            description=description,
            aliases=[],
            confidence=0.7,
            evidence=[
                CandidateSpan(message_ref="m1", quote=quote, char_start=start, char_end=start + len(quote))
            ],
            relations=[],
            claims=[],
        )

    out = map_extraction(
        seg,
        SegmentExtraction(
            concepts=[
                fact("I went hiking last week", "Dana went hiking in the week before 8 May 2023."),
                fact("I went hiking again yesterday", "Dana went hiking again on 7 May 2023."),
            ],
            reactions=[],
        ),
        "llm-test",
        T0,
    )
    assert [m["title"] for m in out.mentions] == ["Dana went hiking"] * 2  # the contract's short form
    assert len({m["description"] for m in out.mentions}) == 2 and out.stats["merged_duplicates"] == 0


# ------------------------------------------------------------------------------------------------ router
def cand(title, type_="event", description="", confidence=0.7, told=T0, **kw) -> Candidate:
    base = dict(
        mention_id="m-1", segment_id="s-1", message_id="msg-1", conversation_id="c-1", span_start=0,
        span_end=len(title), surface=title, title=title, type=type_, description=description or title + ".",
        aliases=(), relations=(), confidence=confidence, extractor="t", message_created_at=told,
    )  # fmt: skip
    base.update(kw)
    return Candidate(**base)


def view(
    type_="event",
    title="Caroline went to a LGBTQ support group",
    description="",
    state="active",
    aliases=None,
    best_evidence_confidence=0.7,
    shares_participants=True,
) -> ConceptView:
    known = concept("k1", title, type_, description or title + ".", state, aliases, first_seen=T0)
    return ConceptView(known, best_evidence_confidence, False, shares_participants)  # fmt: skip


def hit(similarity, lexical=0.0, cid="k1") -> RetrievalHit:
    return RetrievalHit(cid, 0.65 * similarity + 0.2 * lexical, similarity, lexical, 0.0, 1.0)


def test_a_fact_is_screened_by_its_canonical_title_not_rejected_as_a_sentence():
    router = Router()
    long = cand(
        "Caroline went to a LGBTQ support group yesterday (7 May 2023), and it was so powerful for Caroline",
        span_end=5,
        surface="I wen",
    )
    assert long.canonical_title == "Caroline went to a LGBTQ support group"
    assert router.screen(long, "I went", True) is None
    d = router.screen(cand("Caroline and others last chatted", span_end=5, surface="we la"), "we la", True)
    assert (d.action, d.reason_code) == ("reject", "boilerplate_title")


def test_facts_attach_only_to_the_same_fact_at_a_compatible_time():
    router = Router()
    dated = "Caroline went to a LGBTQ support group yesterday (7 May 2023)."
    same = cand("Caroline went to a LGBTQ support group", description=dated)
    d = router.route(same, [hit(0.95)], {"k1": view(description=dated)})
    assert (d.action, d.reason_code) == ("attach", "match") and "times compatible" in d.rationale
    # the same words about a visit a month later: another event
    later = cand("Caroline went to a LGBTQ support group", description="... (9 June 2023).")
    d = router.route(later, [hit(0.97, lexical=1.0)], {"k1": view(description=dated)})
    assert (d.action, d.reason_code) == ("create", "event_time_differs")
    # undated events told 30 days apart: another event; a belief is not bound by time
    undated = cand("Caroline went hiking", told=T0 + timedelta(days=30))
    assert router.route(undated, [hit(0.99)], {"k1": view()}).reason_code == "event_time_differs"
    belief = cand("Caroline loves hiking", type_="belief", told=T0 + timedelta(days=90))
    liked = view(type_="belief", description="Caroline loves hiking.")
    assert router.route(belief, [hit(0.95)], {"k1": liked}).action == "attach"
    # a neighbour fact (below the fact threshold) is a new concept; the band is ambiguous without adjudicator
    assert router.route(belief, [hit(0.70)], {"k1": view(type_="belief")}).reason_code == "novel"
    assert router.route(belief, [hit(0.84)], {"k1": view(type_="belief")}).reason_code == "ambiguous_create"
    # a fact never meets a name, however close
    assert (
        router.route(belief, [hit(0.99)], {"k1": view(type_="entity", title="hiking")}).reason_code
        == "no_match"
    )
    # a concept from conversations of other people is never the same thing
    d = router.route(belief, [hit(0.99)], {"k1": view(type_="belief", shares_participants=False)})
    assert d.reason_code == "other_participants"


def test_facts_are_refined_by_a_dated_or_more_confident_restatement():
    router = Router()
    undated = view(description="Caroline went to a LGBTQ support group.")
    dated = cand("Caroline went to a LGBTQ support group", description="Caroline went to it (7 May 2023).")
    d = router.route(dated, [hit(0.95)], {"k1": undated})
    assert (d.action, d.reason_code, d.description) == (
        "refine",
        "refine_dated",
        "Caroline went to it (7 May 2023).",
    )
    weak = view(type_="goal", state="weak", best_evidence_confidence=0.4)
    d = router.route(
        cand("Caroline went to a LGBTQ support group", "goal", "Better.", 0.9), [hit(0.95)], {"k1": weak}
    )
    assert (d.action, d.reason_code, d.description) == ("refine", "refine_weak", "Better.")


def test_a_name_keeps_a_definition_not_the_event_it_occurred_in():
    router = Router()
    oscar = view(type_="entity", title="Oscar", description="Oscar, mentioned by Melanie.")
    better = cand("Oscar", "entity", "Oscar is Melanie's guinea pig.")
    d = router.route(better, [hit(0.9, lexical=1.0)], {"k1": oscar})
    assert (d.action, d.reason_code, d.description) == (
        "refine",
        "refine_definition",
        "Oscar is Melanie's guinea pig.",
    )
    defined = view(type_="entity", title="Oscar", description="Oscar is Melanie's guinea pig.", state="weak",
                   best_evidence_confidence=0.3)  # fmt: skip
    event = cand("Oscar", "entity", "Melanie went to the vet with Oscar yesterday (7 May 2023).", 0.9)
    assert router.route(event, [hit(0.9, lexical=1.0)], {"k1": defined}).action == "attach"
    with_use = cand("Oscar", "entity", "Oscar, mentioned by Melanie.", usage="Oscar toys")
    d = router.route(with_use, [hit(0.9, lexical=1.0)], {"k1": defined})
    assert (d.action, d.reason_code) == ("refine", "refine_context")
    assert d.description == "Oscar is Melanie's guinea pig. Contexts: Oscar toys."


def test_name_summaries():
    assert summaries.definition_rank(["Oscar"], "Oscar is Melanie's guinea pig.") == 2
    assert summaries.definition_rank(["Oscar"], "Oscar, mentioned by Melanie.") == 1
    assert summaries.definition_rank(["Oscar"], "Melanie took Oscar to the vet.") == 0
    text = "I went to a LGBTQ support group yesterday, and LGBTQ rights matter. Max ate my shoes."
    spans = [
        (text.index("LGBTQ"), "LGBTQ support group"),
        (text.rindex("LGBTQ"), ""),
        (text.index("Max"), ""),
    ]
    for start, context in spans:
        end = start + (3 if text[start] == "M" else 5)
        assert summaries.usage_context(text, start, end) == context
    described = summaries.compose("LGBTQ, mentioned by Caroline.", ["LGBTQ support group", "LGBTQ art show"])
    assert summaries.split(described) == (
        "LGBTQ, mentioned by Caroline.",
        ["LGBTQ support group", "LGBTQ art show"],
    )
    full = summaries.compose("X.", ["a", "b", "c"])
    assert summaries.summary(["X"], full, "X.", "d", False) == (full, None)  # at most three contexts


@pytest.mark.parametrize(
    "description, interval",
    [
        ("Caroline went (7 May 2023).", (date(2023, 5, 7), date(2023, 5, 7))),
        ("... (the week before 13 October 2023).", (date(2023, 10, 6), date(2023, 10, 13))),
        ("... (the weekend of 15 July 2023).", (date(2023, 7, 15), date(2023, 7, 16))),
        ("... next month (September 2023).", (date(2023, 9, 1), date(2023, 9, 30))),
        ("Tim took it last year (2022).", (date(2022, 1, 1), date(2022, 12, 31))),
        ("The user flew out on 2024-03-02.", (date(2024, 3, 2), date(2024, 3, 2))),
        ("Nadia runs on May 7, 2023.", (date(2023, 5, 7), date(2023, 5, 7))),
        ("Melanie has 2000 followers.", None),
    ],
)
def test_described_interval(description, interval):
    assert described_interval(description) == interval


# ------------------------------------------------------------------------------------------------ the seam
def _sample(sample_id, a, b, sessions):
    conversation = {"speaker_a": a, "speaker_b": b}
    for i, (when, turns) in enumerate(sessions, start=1):
        conversation[f"session_{i}_date_time"] = when
        conversation[f"session_{i}"] = [
            {"speaker": who, "dia_id": f"D{i}:{j}", "text": text}
            for j, (who, text) in enumerate(turns, start=1)
        ]
    return {"sample_id": sample_id, "conversation": conversation, "qa": []}


LOCOMO = [
    _sample(
        "conv-a",
        "Caroline",
        "Melanie",
        [
            (
                "1:56 pm on 8 May, 2023",
                [
                    ("Caroline", "Hey Mel! Since we last chatted, I went to a LGBTQ support group yesterday."),
                    ("Melanie", "Wow! I adore Oscar, my guinea pig. I walked Max today."),
                ],
            ),
            (
                "10:00 am on 9 June, 2023",
                [
                    ("Caroline", "I'm putting together an LGBTQ art show next month!"),
                    ("Melanie", "Yesterday Oscar chewed up my sheet music, so I play clarinet by heart now."),
                ],
            ),
        ],
    ),
    _sample(
        "conv-b",
        "John",
        "Maria",
        [("3:00 pm on 2 May, 2023", [("John", "We had to say goodbye to Max last week."), ("Maria", "Sorry!")])],
    ),
]  # fmt: skip


def _consolidated(home, tmp_path, name: str, samples: list[dict]):
    """(store, loop report) of LoCoMo-shaped `samples` through ingestion, the offline teacher and the loop."""
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(samples), encoding="utf-8")
    store = home.corpus(name)
    ingest_file(store, str(path), "locomo")
    build_segments(store)
    extract_corpus(store, OfflineTeacher())
    rules = RouterRules(alias_attach_similarity=0.3, fact_alias_similarity=0.3)  # hashing cosines run low
    return store, consolidate(store, HashingEmbedder(), LoopConfig(rules=rules))


def test_the_offline_teachers_mentions_become_a_coherent_concept_memory(home, tmp_path):
    store, report = _consolidated(home, tmp_path, "friends", LOCOMO)
    with store.staging.connect() as conn:
        concepts = [dict(r) for r in conn.execute(select(canonical_concepts)).mappings()]
        rejected = dict(
            conn.execute(
                select(residuals.c.reason_code, mentions.c.title).join(
                    mentions, mentions.c.mention_id == residuals.c.mention_id
                )
            )
            .tuples()
            .all()
        )
        reasons = list(conn.execute(select(action_log.c.scores["reason_code"].as_string())).scalars())
    by_key = {}
    for c in concepts:
        by_key.setdefault((c["type"], c["title"]), []).append(c)
    # a fact: a short canonical title, the whole fact with its resolved date in the description
    event = by_key[("event", "Caroline went to a LGBTQ support group")][0]
    assert event["description"] == "Caroline went to a LGBTQ support group yesterday (7 May 2023)."
    for c in concepts:
        if c["type"] not in ("entity", "project"):
            assert "…" not in c["title"] and "(" not in c["title"]
            assert len(c["title"].split()) <= MAX_FACT_TITLE_WORDS
    # names: defined by what they are, with the phrases they are used in - not by an event sentence
    (lgbtq,) = by_key[("entity", "LGBTQ")]
    assert lgbtq["support_count"] == 2 and lgbtq["revision_count"] == 1
    assert (
        lgbtq["description"] == "LGBTQ, mentioned by Caroline. Contexts: LGBTQ support group; LGBTQ art show."
    )
    (oscar,) = by_key[("entity", "Oscar")]
    # named twice, and the subject of a fact ("Oscar, my guinea pig, loves carrots"): a hub with its evidence
    assert oscar["description"] == "Oscar is Melanie's guinea pig." and oscar["support_count"] == 3
    # a habit read into one phrasing, with no episodes in other conversations, stays a residual, and so do
    # themes said in one conversation only; nothing else is rejected
    assert rejected["reflective_unsupported"] == "Melanie plays clarinet by heart"
    assert set(report.reject_reasons) == {"reflective_unsupported", "theme_unsupported"}
    assert report.reject_reasons["reflective_unsupported"] == 1
    # "Max" in Melanie's chats and "Max" in John's are two things: no one takes part in both
    assert len(by_key[("entity", "Max")]) == 2 and "other_participants" in reasons


HUBS = [
    _sample(
        "conv-h",
        "Melanie",
        "Caroline",
        [
            (
                "1:56 pm on 8 May, 2023",
                [
                    ("Melanie", "I signed up for a pottery class last week. My sister Priya moved to Seattle, and she got a job at Microsoft."),
                    ("Caroline", "That's awesome! I play the clarinet in a band."),
                ],
            ),
            (
                "10:00 am on 9 June, 2023",
                [
                    ("Melanie", "I finished my first bowl at the pottery class yesterday!"),
                    ("Caroline", "So proud of you! Priya must be thrilled with Seattle."),
                ],
            ),
        ],
    ),
]  # fmt: skip


def test_subjects_and_recurring_themes_are_hubs_and_facts_point_to_them(home, tmp_path):
    """The parse-based teacher's hubs through the memory loop: a person's concept holds every fact told
    about them, a theme said in two conversations becomes a concept (one said once stays a residual), a
    pronoun finds its person, and each fact is `about` the hubs whose evidence lies inside its own."""
    store, report = _consolidated(home, tmp_path, "hubs", HUBS)
    with store.staging.connect() as conn:
        concepts = {
            c["concept_id"]: c
            for c in conn.execute(
                select(canonical_concepts).where(canonical_concepts.c.state.in_(("active", "weak")))
            ).mappings()
        }
        held = set(
            conn.execute(
                select(mentions.c.title)
                .join(residuals, residuals.c.mention_id == mentions.c.mention_id)
                .where(residuals.c.reason_code == "theme_unsupported")
            ).scalars()
        )
    by_title = {c["title"]: c for c in concepts.values()}
    # the speaker's hub: every fact she tells about herself, over both conversations
    melanie = by_title["Melanie"]
    assert melanie["type"] == "entity" and melanie["support_count"] >= 2
    assert len({e["message_id"] for e in melanie["evidence_spans"]}) == 2
    # a theme in two conversations is a concept; one said once is held as a residual, judged again later
    pottery = by_title["pottery class"]
    assert pottery["support_count"] == 2 and "clarinet" in held and "clarinet" not in by_title
    assert report.themes["named"] >= 1 and report.themes["residual"] >= 1
    # "she got a job at Microsoft": she is Priya, the fact is Priya's
    (job,) = [c for c in concepts.values() if c["type"] == "event" and "Microsoft" in c["title"]]
    assert job["title"].startswith("Priya")
    # facts point to their hubs: the class event to Melanie and to the pottery class, Priya's move to Priya
    about = {
        c["title"]: {concepts[r["target_id"]]["title"] for r in c["relations"] if r["relation"] == "about"}
        for c in concepts.values()
        if c["type"] not in ("entity", "project")
    }
    signed_up = next(t for t in about if "signed up" in t)
    assert {"Melanie", "pottery class"} <= about[signed_up]
    moved = next(t for t in about if "moved to Seattle" in t)
    assert {"Priya", "Seattle"} <= about[moved]

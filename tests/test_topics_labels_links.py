"""Layer 2: c-TF-IDF labels, weighted topic→concept links and anchor selection, on small hand-checked inputs."""

from __future__ import annotations

import numpy as np
import pytest

from memory_core.topics import links as links_module
from memory_core.topics.domains import assign_domains, association, choose_anchors
from memory_core.topics.labels import class_tfidf, distinct_terms, name_stop_words, term_labels, topic_name
from memory_core.topics.links import LinkConfig, weighted_links
from memory_core.topics.tuner import TunerConfig
from tests.topic_samples import blobs

DOCS = [
    "Caroline: I'm going hiking on the mountain trail. The mountain trail was steep, hiking is great!",
    "Melanie: My pottery class is fun. Pottery clay, pottery wheel, Caroline's bowl came out well.",
    "Caroline: The adoption agency called. Adoption agency interview next week, adoption papers.",
]


def test_class_tfidf_picks_distinctive_terms_without_names_fillers_or_contractions():
    labels = term_labels(
        DOCS, name_stop_words(["Caroline", "Melanie"]), noise_doc="hello there, random words"
    )
    # the label names the topic from its strongest terms; the profile lists them
    assert [lab.label for lab in labels] == [
        "Hiking and mountain trail",
        "Pottery and bowl came",
        "Adoption agency and called",
    ]
    assert [lab.profile.split(", ")[:2] for lab in labels][0] == ["hiking", "mountain trail"]
    # bigrams only of adjacent words inside a clause: "trail was steep, hiking" makes no "steep hiking"
    assert "steep hiking" not in dict(class_tfidf(DOCS)[0]) and "mountain trail" in dict(class_tfidf(DOCS)[0])
    everything = " ".join(lab.profile for lab in labels)
    for unwanted in ("caroline", "melanie", "i'm", "great", "going"):
        assert unwanted not in everything.split(", "), unwanted
    assert all(w > 0 for lab in labels for _, w in lab.keywords)
    # ranking: term weight falls with how many classes use the term
    ranked = class_tfidf(["apple banana", "apple cherry"], top_n=5)
    assert dict(ranked[0])["banana"] > dict(ranked[0])["apple"]


def test_distinct_terms_merge_and_skip_overlaps():
    ranked = [
        ("adoption", 1.0),
        ("adoption agency", 0.9),
        ("agency", 0.8),
        ("papers", 0.5),
        ("adoption papers", 0.1),
    ]
    assert distinct_terms(ranked, 3) == ["adoption agency", "papers"]
    weak_pair = [("pottery", 1.0), ("pottery drying", 0.2), ("clay", 0.5)]
    assert distinct_terms(weak_pair, 3) == ["pottery", "clay"]
    inflected = [("painting", 1.0), ("paintings", 0.9), ("paint", 0.8), ("sunset", 0.5)]
    assert distinct_terms(inflected, 3) == ["painting", "sunset"]  # one term, not three spellings of it
    assert topic_name(["adoption agency", "adoption", "papers"]) == "Adoption agency and papers"
    assert "mel" in name_stop_words(["Melanie"]) and "caro" in name_stop_words(["Caroline"])


def test_rerank_orders_candidates_by_closeness_to_the_centroid():
    basis = {"hiking": [1, 0, 0], "mountain": [0.6, 0.8, 0], "trail": [0, 1, 0], "steep": [0, 0, 1]}

    def embed(terms):
        return np.array([basis.get(t, [0.1, 0.1, 0.1]) for t in terms], dtype=np.float32)

    docs = ["hiking mountain trail steep steep steep", "pottery clay"]
    centroids = np.array([[0, 1, 0], [1, 0, 0]], dtype=np.float32)
    plain = term_labels(docs, label_terms=1, profile_terms=4)
    reranked = term_labels(docs, label_terms=1, profile_terms=4, centroids=centroids, embed=embed)
    assert plain[0].label == "Steep"  # most frequent
    assert reranked[0].label.startswith("Trail")  # nearest the centroid
    assert term_labels(["", "the and"], label_terms=2)[0].label == "(no distinctive terms)"


def _naive_links(t, c, config):
    t = t / np.linalg.norm(t, axis=1, keepdims=True)
    c = c / np.linalg.norm(c, axis=1, keepdims=True)
    sims = t @ c.T
    out = {}
    for i in range(len(t)):
        lo, hi = (
            (sims.min(), sims.max()) if config.normalisation == "global" else (sims[i].min(), sims[i].max())
        )
        weights = 100 * (sims[i] - lo) / (hi - lo)
        for j in sorted(range(len(c)), key=lambda j: (-sims[i, j], j))[: config.top_k]:
            if weights[j] > config.min_weight:
                out[(i, j)] = weights[j]
    return out


@pytest.mark.parametrize("normalisation", ["global", "per_topic"])
def test_weighted_links_match_the_definition_and_block_independently(monkeypatch, normalisation):
    rng = np.random.default_rng(1)
    t, c = rng.normal(size=(7, 12)), rng.normal(size=(30, 12))
    config = LinkConfig(top_k=4, min_weight=20.0, normalisation=normalisation)
    monkeypatch.setattr(links_module, "_BLOCK", 3)  # several blocks
    m = weighted_links(t, c, config)
    got = dict(zip(zip(m.topic_index.tolist(), m.concept_index.tolist(), strict=True), m.weight, strict=True))
    expected = _naive_links(t, c, config)
    assert set(got) == set(expected)
    assert all(got[k] == pytest.approx(expected[k], abs=1e-4) for k in got)
    assert ((m.weight > 20) & (m.weight <= 100)).all()
    assert np.bincount(m.topic_index).max() <= 4
    if normalisation == "per_topic":  # every topic's best concept is its 100
        assert sorted(set(m.topic_index[m.weight >= 100 - 1e-6].tolist())) == list(range(7))
    else:  # one scale: only the single closest pair of the matrix reaches 100
        assert (m.weight >= 100 - 1e-6).sum() == 1


def test_weighted_links_edge_cases():
    one = weighted_links(np.eye(2, 4), np.ones((1, 4)), LinkConfig())
    assert one.weight.tolist() == [100.0, 100.0]  # a single concept: the range is degenerate
    empty = weighted_links(np.eye(2, 4), np.zeros((0, 4)), LinkConfig())
    assert len(empty) == 0
    with pytest.raises(ValueError, match="same embedding model"):
        weighted_links(np.eye(2, 4), np.ones((3, 5)), LinkConfig())
    with pytest.raises(ValueError, match="normalisation"):
        weighted_links(np.eye(2, 4), np.ones((3, 4)), LinkConfig(normalisation="zscore"))  # type: ignore[arg-type]


def test_anchors_prefer_entities_concentrated_in_their_domain():
    # domains: {0, 1, 2}, {3, 4}, {5}. Concepts: 0 entity in every topic, 1 entity in topics 0-1, 2 belief
    # strongly linked to topics 0-2, 3 entity only in topic 5.
    domain_of_topic = np.array([0, 0, 0, 1, 1, 2])
    links = [(0, 2, 90.0), (1, 2, 90.0), (2, 2, 80.0), (3, 0, 50.0)]
    evidence = [(0, 1), (1, 1), (5, 3)] + [(t, 0) for t in range(6)]
    assoc = association(6, links, evidence)
    values = dict(zip(zip(assoc[0].tolist(), assoc[1].tolist(), strict=True), assoc[2].tolist(), strict=True))
    assert values[(0, 2)] == pytest.approx(0.9) and values[(3, 0)] == 1.0  # evidence beats a link
    preferred = np.array([True, True, False, True])
    type_factor = np.array([1.0, 1.0, 0.5, 1.0])
    anchors, anchor_of_topic = choose_anchors(
        domain_of_topic, *assoc, type_factor, 2, min_anchor_topics=2, preferred=preferred
    )
    by_domain = {d: [a.concept for a in anchors if a.domain == d] for d in range(3)}
    # domain 0: entity 1 (2 topics, all its mass here: 2.0) outranks entity 0 (3 of its 6 topics: 1.5); the
    # belief scores higher but takes a slot only after the preferred types
    assert by_domain[0] == [1, 0]
    assert anchors[anchor_of_topic[0]].concept == 1 and anchors[anchor_of_topic[2]].concept == 0
    assert by_domain[1] == [0]  # entity 3 is elsewhere; min_anchor_topics=2 needs both topics
    # a one-topic domain needs one associated topic: entity 3 lives only there
    assert by_domain[2][0] == 3 and anchors[anchor_of_topic[5]].concept == 3
    assert anchors[by_domain[0].index(1)].score == pytest.approx(2.0)
    # a topic with no association → its domain's general anchor
    anchors, anchor_of_topic = choose_anchors(
        np.array([0, 0]), np.array([0]), np.array([0]), np.array([1.0]), np.ones(1), 3, min_anchor_topics=1
    )
    assert anchors[anchor_of_topic[0]].concept == 0 and anchors[anchor_of_topic[1]].concept is None


def test_noise_topics_join_the_nearest_domain():
    vectors, truth = blobs(n_per=6, k=2, dim=16, noise=0.05)
    outlier = (vectors[0] * 0.6 + vectors[6] * 0.4)[None, :]
    all_vectors = np.concatenate([vectors, outlier / np.linalg.norm(outlier)])
    labels, reassigned, tuning = assign_domains(all_vectors, TunerConfig(n_trials=6, min_points=6))
    assert tuning.path == "tuned" and (labels >= 0).all()
    assert labels[-1] == labels[0]  # nearer the first group
    assert len(set(labels[:6].tolist())) == 1 and labels[0] != labels[6]

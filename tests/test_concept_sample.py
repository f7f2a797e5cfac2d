"""`python -m evals.concept_sample`: a seeded sample of a built corpus's live concepts with their evidence."""

from __future__ import annotations

from evals.concept_sample import corpus_figures, main, sample_concepts


def test_a_seeded_sample_of_live_concepts_with_their_evidence(built_demo, tmp_path, capsys):
    home, name = built_demo
    store = home.corpus(name, readonly=True)
    figures = corpus_figures(store)
    assert figures["concepts"] > 10 and 0 <= figures["weak_share"] <= 1
    assert figures["mentions_per_concept"] == round(figures["linked_mentions"] / figures["concepts"], 2)
    first, again, other = (sample_concepts(store, 5, seed) for seed in (0, 0, 1))
    assert [c["concept_id"] for c in first] == [c["concept_id"] for c in again]  # the seed fixes the draw
    assert {c["concept_id"] for c in first} != {c["concept_id"] for c in other}
    assert len(first) == 5 and all(c["evidence"] and c["state"] != "archived" for c in first)
    assert all(e["message"] and e["span"] for c in first for e in c["evidence"])
    out = tmp_path / "sample.md"
    main(["--home", str(home.root), "--corpus", name, "--n", "3", "--out", str(out)])
    text = out.read_text()
    assert text.count("\n| ") == 4 and f"concepts {figures['concepts']}" in text  # header + 3 rows
    assert "| concept | type |" in capsys.readouterr().out

"""The shipped verification engine on clear-cut and bad input."""

from __future__ import annotations

import numpy as np
import pytest

from side.verify.verifier import MAX_SENTENCES, Query, Verdict, Verifier, evidence_order

EIFFEL = Query(
    claim="The Eiffel Tower is 330 metres tall.",
    title="Eiffel Tower",
    section="Design",
    context="The tower was completed in 1889. The Eiffel Tower is 330 metres tall.",
)
SUPPORTING = [
    "Paris hosts many visitors every year.",
    "The Eiffel Tower is 330 metres (1,083 ft) tall, about the same height as an 81-storey building.",
    "Gustave Eiffel's company designed and built the tower.",
    "Tickets can be bought online.",
]
UNRELATED = [
    "Salmon migrate upstream to spawn in freshwater rivers.",
    "Many species of trout live in cold lakes.",
    "Fishing licences are required in most regions.",
]


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(device="cpu")


def test_supporting_source_outscores_unrelated_source(verifier):
    good, bad = verifier.verify_many([(EIFFEL, SUPPORTING), (EIFFEL, UNRELATED)])
    assert good.score > bad.score
    assert good.evidence[0].sentence_index == 1
    assert len(good.evidence) <= 3
    assert set(good.probabilities) == {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}


def test_verdict_round_trips_through_dict(verifier):
    verdict = verifier.verify(EIFFEL, SUPPORTING)
    assert Verdict.from_dict(verdict.to_dict()) == verdict


@pytest.mark.parametrize(
    "query, sentences, reason",
    [
        (Query(""), SUPPORTING, "empty claim"),
        (Query("   "), SUPPORTING, "empty claim"),
        (EIFFEL, [], "empty source"),
        (EIFFEL, ["", "   "], "empty source"),
        (EIFFEL, ["Der Eiffelturm ist ein 330 Meter hoher Eisenfachwerkturm in Paris.",
                  "Er wurde für die Weltausstellung 1889 errichtet und ist heute ein Wahrzeichen der Stadt.",
                  "Die Aussichtsplattformen sind über Treppen und Aufzüge erreichbar."], "not in English"),
    ],
)
def test_bad_input_gives_not_enough_info_with_reason(verifier, query, sentences, reason):
    verdict = verifier.verify(query, sentences)
    assert verdict.label == "NOT ENOUGH INFO"
    assert reason in verdict.reason
    assert verdict.score == 0.0


def test_huge_source_is_bounded(verifier):
    """Ten megabytes of text give a verdict over a bounded number of sentences."""
    text = ("Filler sentence number one about nothing in particular. " * 180_000)[:10_000_000]
    prepared = verifier.run([(EIFFEL, ["x"] * (MAX_SENTENCES * 3))])[0]
    assert len(prepared.sentences) == MAX_SENTENCES
    verdict = verifier.verify_text(EIFFEL, text + " The Eiffel Tower is 330 metres tall.")
    assert verdict.label in {"SUPPORTS", "REFUTES", "NOT ENOUGH INFO"}


def test_a_claim_with_its_article_keeps_the_retrieval_order_of_its_evidence(verifier):
    """The cross-encoder calls titled Wikipedia claims unsupported whatever the sentence, so their
    evidence keeps the retrieval order; a bare claim's evidence follows the cross-encoder too."""
    bare = Query(EIFFEL.claim)
    titled, untitled = verifier.run([(EIFFEL, SUPPORTING), (bare, SUPPORTING)])
    assert titled.evidence_order == [c.index for c in titled.candidates]
    assert [e.sentence_index for e in titled.decided.evidence] == titled.evidence_order[:len(titled.decided.evidence)]
    support = untitled.probabilities[:-1, 0]  # column 0: SUPPORTS
    assert untitled.evidence_order == [untitled.candidates[i].index for i in evidence_order(bare, support)]


def test_evidence_order_fuses_the_cross_encoder_only_for_a_bare_claim():
    support = np.array([0.1, 0.9, 0.2, 0.05])  # candidates in retrieval order
    assert list(evidence_order(EIFFEL, support)) == [0, 1, 2, 3]
    assert list(evidence_order(Query(EIFFEL.claim), support)) == [1, 0, 2, 3]

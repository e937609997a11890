"""The evidence window: budget, page order, gap marks, and what it holds of a gold evidence set."""

from __future__ import annotations

import numpy as np
import pytest

from side.verify.verifier import Query
from side.verify.window import (
    GAP,
    EvidenceWindow,
    build_evidence_window,
    count_tokens,
    render_window,
    window_scores,
)

FILLER = "The committee met again on a rainy Tuesday afternoon to discuss the agenda at length."
PAGE = [
    "Skip to content",
    "Menu Home News Sport Weather",
    *[f"{FILLER} Item {n}." for n in range(20)],
    "Roger Hedgecock was elected mayor of San Diego in 1983.",
    "He served until 1985, when he resigned.",
    *[f"{FILLER} Note {n}." for n in range(20)],
    "Hedgecock later hosted a radio talk show in San Diego.",
    *[f"{FILLER} Footer {n}." for n in range(10)],
]
MAYOR, RESIGNED, RADIO = 22, 23, 44
QUERY = Query("Hedgecock was mayor of San Diego from 1983, and later hosted a radio talk show.",
              title="Roger Hedgecock")


def test_tokens_are_characters_over_four():
    assert count_tokens("") == 0
    assert count_tokens("abcd") == 1
    assert count_tokens("abcde") == 2


def test_render_marks_every_gap_in_page_order():
    sentences = ["s0", "s1", "s2", "s3", "s4", "s5"]
    text = render_window(sentences, [4, 1, 2])
    assert text.splitlines() == [GAP, "s1", "s2", GAP, "s4", GAP]
    assert render_window(sentences, [0, 1, 5]).splitlines() == ["s0", "s1", GAP, "s5"]


@pytest.mark.parametrize("budget", [60, 120, 250, 400])
def test_window_stays_within_budget_in_page_order(budget):
    window = build_evidence_window(QUERY, PAGE, budget=budget)
    assert window.tokens == count_tokens(window.text) <= budget
    assert list(window.sentences) == sorted(window.sentences)
    lines = [line for line in window.text.splitlines() if line != GAP]
    assert lines == [PAGE[i] for i in window.sentences]
    assert window.budget == budget and window.source_sentences == len(PAGE)


def test_window_holds_the_evidence_and_its_neighbours_with_gaps_marked():
    passages = [MAYOR - 1, MAYOR, MAYOR + 1, RADIO - 1, RADIO, RADIO + 1]
    window = build_evidence_window(QUERY, PAGE, budget=count_tokens(render_window(PAGE, passages)), neighbours=1)
    assert window.sentences == tuple(passages)  # the best sentences with a neighbour either side, not the head
    lines = window.text.splitlines()
    assert lines == [GAP, *PAGE[MAYOR - 1 : MAYOR + 2], GAP, *PAGE[RADIO - 1 : RADIO + 2], GAP]
    wider = build_evidence_window(QUERY, PAGE, budget=400, neighbours=1)
    assert set(passages) < set(wider.sentences)  # a larger budget keeps them and adds more


def test_scores_given_by_the_caller_decide_the_order():
    scores = np.zeros(len(PAGE))
    scores[5] = 1.0
    window = build_evidence_window(QUERY, PAGE, scores=scores, budget=count_tokens(render_window(PAGE, [4, 5, 6])),
                                   neighbours=1)
    assert window.sentences == (4, 5, 6)
    with pytest.raises(ValueError):
        build_evidence_window(QUERY, PAGE, scores=np.zeros(3), budget=70)


def test_neighbours_are_dropped_before_the_sentence_itself():
    scores = np.zeros(len(PAGE))
    scores[MAYOR] = 1.0
    budget = count_tokens(render_window(PAGE, [MAYOR]))
    window = build_evidence_window(QUERY, PAGE, scores=scores, budget=budget, neighbours=2)
    assert window.sentences == (MAYOR,)


def test_a_short_source_is_returned_whole_without_gap_marks():
    window = build_evidence_window(QUERY, PAGE[:3], budget=1000)
    assert window.sentences == (0, 1, 2)
    assert GAP not in window.text
    empty = build_evidence_window(QUERY, [], budget=100)
    assert empty.sentences == () and empty.text == "" and empty.tokens == 0


def test_coverage_of_a_gold_set_needs_every_sentence():
    window = EvidenceWindow("", (3, 4, 9), 0, 100)
    assert window.covers({3, 9})
    assert not window.covers({3, 5})
    assert not window.covers(set())
    assert EvidenceWindow.from_dict(window.to_dict()) == window


def test_context_names_what_a_bare_claim_does_not():
    page = ["Alpha beta gamma.", "Roger Hedgecock said so.", "He resigned in 1985.", "Unrelated words here."]
    bare = window_scores(Query("He resigned."), page, context_weight=0.0)
    with_title = window_scores(Query("He resigned.", title="Roger Hedgecock"), page, context_weight=0.5)
    assert with_title[1] - bare[1] > 0  # the title lifts the sentence that names the subject
    assert int(np.argmax(with_title)) == 2  # the claim's own words still decide


def test_a_neighbour_comes_next_when_it_bears_on_the_claim_too():
    page = ["Alpha filler words.", "Zed moved to Lyon.", "He won the cup there in 1990.", "Beta filler words.",
            "Gamma filler words.", "Lyon is a city.", "Delta filler words."]
    claim = Query("Zed won the cup in Lyon in 1990 after he moved to Lyon.")
    alone = window_scores(claim, page, context_weight=0.0, neighbour_weight=0.0)
    smoothed = window_scores(claim, page, context_weight=0.0, neighbour_weight=0.3)
    assert smoothed[1] - alone[1] > smoothed[5] - alone[5]  # beside the best sentence, lifted more
    assert np.argsort(-smoothed)[:2].tolist() in ([1, 2], [2, 1])

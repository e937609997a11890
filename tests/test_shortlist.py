"""The BM25 shortlist that bounds what the bi-encoder embeds of a long page, its settings, and
the sentence-embedding cache that makes a page seen before cheap."""

from __future__ import annotations

import numpy as np
import pytest

from side.config import VerifierConfig, load_config
from side.data import load_wice
from side.evaluation.verify import wice_sentences
from side.verify.evidence import bm25_scores, lexical_shortlist
from side.verify.verifier import Query, Verifier

from conftest import need_data


class CountingEncoder:
    """The real encoder, counting the texts it is asked to embed."""

    def __init__(self, encoder) -> None:
        self.encoder, self.texts, self.word_reads = encoder, 0, 0

    @property
    def dim(self) -> int:
        return self.encoder.dim

    def encode(self, texts, batch_size: int = 64, words=None):
        self.texts += len(texts)
        return self.encoder.encode(texts, batch_size=batch_size, words=words)

    def token_vectors(self, texts):
        """Texts read a second time for their word vectors (soft coverage), counted apart."""
        self.word_reads += len(texts)
        return self.encoder.token_vectors(texts)


@pytest.fixture(scope="module")
def shipped() -> Verifier:
    return Verifier.load(device="cpu")


def counting(verifier: Verifier, **kwargs) -> tuple[Verifier, CountingEncoder]:
    """A verifier on the same models with a fresh embedding cache whose encoder counts."""
    fresh = Verifier(verifier.cross_encoder, verifier.encoder, verifier.combiner, tagger=verifier.tagger, **kwargs)
    encoder = CountingEncoder(verifier.encoder)
    fresh.embeddings.encoder = encoder
    return fresh, encoder


def test_shortlist_takes_the_best_sentences_with_their_neighbours():
    scores = np.zeros(100)
    scores[[10, 50, 90]] = [3.0, 2.0, 1.0]
    assert lexical_shortlist(scores, budget=6, neighbours=1) == [9, 10, 11, 49, 50, 51]
    assert lexical_shortlist(scores, budget=4, neighbours=1) == [9, 10, 11, 50]  # the best hit before neighbours
    assert lexical_shortlist(scores, budget=3, neighbours=0) == [10, 50, 90]
    assert lexical_shortlist(scores, budget=2, neighbours=0) == [10, 50]


def test_short_page_or_no_budget_keeps_every_sentence():
    scores = np.arange(5, dtype=float)
    assert lexical_shortlist(scores, budget=5) == [0, 1, 2, 3, 4]
    assert lexical_shortlist(scores, budget=0) == [0, 1, 2, 3, 4]


def test_shortlist_keeps_the_gold_sentences_of_real_long_pages():
    """On WiCE dev pages longer than the default shortlist, nearly every gold evidence sentence
    survives it (the default was chosen on WiCE train pages, where 97.6% do)."""
    budget, neighbours = VerifierConfig.shortlist, VerifierConfig.shortlist_neighbours
    kept, gold_total = 0, 0
    for claim in load_wice(need_data("wice/claim_dev.jsonl")):
        page = wice_sentences(claim)
        if len(page) <= budget or not claim.gold_sentences:
            continue
        shortlist = set(lexical_shortlist(bm25_scores(claim.claim, page), budget, neighbours))
        assert len(shortlist) == budget
        kept += len(claim.gold_sentences & shortlist)
        gold_total += len(claim.gold_sentences)
    assert gold_total > 100
    assert kept / gold_total >= 0.9


def test_long_page_embeds_at_most_the_shortlist_and_finds_the_evidence(shipped):
    verifier, encoder = counting(shipped, shortlist=32, shortlist_neighbours=1)
    page = [f"Item {i} of the catalogue lists a brass lamp from workshop {i}." for i in range(3000)]
    page[2400] = "The Eiffel Tower is 330 metres tall since a new antenna was added in 2022."
    page[2401] = "It was the tallest structure in the world until 1930."
    prepared = verifier.run([(Query("The Eiffel Tower is 330 metres tall."), page)])[0]
    assert encoder.texts <= 32 + 1  # the shortlist and the claim
    assert prepared.decided.evidence[0].sentence_index == 2400
    assert 2401 in {c.index for c in prepared.candidates}  # the neighbour came along


def test_no_shortlist_embeds_the_whole_page(shipped):
    verifier, encoder = counting(shipped, shortlist=0)
    page = [f"Item {i} of the catalogue lists a brass lamp from workshop {i}." for i in range(80)]
    verifier.verify(Query("Workshop 7 made a brass lamp."), page)
    assert encoder.texts == 80 + 1


def test_a_page_seen_before_embeds_nothing_again(shipped):
    verifier, encoder = counting(shipped, shortlist=16)
    page = [f"Sentence {i} says the harbour of town {i} opened in {1800 + i}." for i in range(40)]
    query = Query("The harbour of town 12 opened in 1812.")
    first = verifier.verify(query, page)
    embedded = encoder.texts
    assert 0 < embedded <= 16 + 1
    again = verifier.verify(query, page)
    assert encoder.texts == embedded  # every sentence and the claim came from the cache
    assert again == first
    # Soft coverage's word vectors came off the embedding pass: no text was read twice.
    assert encoder.word_reads == 0 and again.signals["soft_coverage"] > 0


def test_shortlist_comes_from_the_configuration(shipped):
    config = load_config(environ={"SIDE_VERIFIER_SHORTLIST": "24", "SIDE_VERIFIER_SHORTLIST_NEIGHBOURS": "2"})
    assert (config.verifier.shortlist, config.verifier.shortlist_neighbours) == (24, 2)
    verifier = Verifier.from_config(config)
    assert (verifier.shortlist, verifier.shortlist_neighbours) == (24, 2)
    from side.pipeline import Pipeline

    pipeline = Pipeline.from_config(config, offline=True, use_index=False)
    assert (pipeline.verifier.shortlist, pipeline.verifier.shortlist_neighbours) == (24, 2)
    default = Verifier.from_config(load_config(environ={}))
    assert default.shortlist == VerifierConfig.shortlist > 0

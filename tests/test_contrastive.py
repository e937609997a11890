"""Contrastive and document-level training pairs (side.training.contrastive) from the shared data."""

from __future__ import annotations

from collections import defaultdict

import pytest

from side.training.contrastive import (
    CHUNK_WORDS,
    CONTRASTIVE_SETS,
    detokenize,
    factcg_examples,
    fib_examples,
    fm2_examples,
    summedits_examples,
    vitaminc_examples,
)


def test_detokenize_undoes_fever_tokenisation():
    assert detokenize("Minogue 's first single -LRB- 2005 -RRB- , by `` BPI '' .") == \
        "Minogue's first single (2005), by \"BPI\"."
    assert detokenize("2 Hearts -LRB-Kylie Minogue song-RRB-") == "2 Hearts (Kylie Minogue song)"


@pytest.fixture(scope="module")
def vitaminc(data_dir):
    return vitaminc_examples(data_dir)


def test_vitaminc_twins_carry_their_title_whatever_the_label(vitaminc):
    titled = [ex for ex in vitaminc if ex.title]
    assert len(titled) == len(vitaminc)
    assert {"S", "R", "N"} <= {ex.label for ex in titled}
    by_group = defaultdict(set)
    for ex in vitaminc:
        by_group[ex.group].add(ex.label)
    contrastive = [labels for labels in by_group.values() if "S" in labels and len(labels) > 1]
    assert len(contrastive) > len(by_group) / 2  # most cases hold a supported and an unsupported twin


def test_fm2_has_titled_supported_refuted_and_same_page_negatives(data_dir):
    examples = fm2_examples(data_dir)
    assert {ex.label for ex in examples} == {"S", "R", "N"}
    assert all(ex.title for ex in examples)
    by_group = defaultdict(list)
    for ex in examples:
        by_group[ex.group].append(ex)
    for group in list(by_group.values())[:200]:
        gold = [ex for ex in group if ex.label != "N"]
        assert len(gold) == 1
        assert all(ex.context == gold[0].context and ex.passage != gold[0].passage for ex in group if ex.label == "N")


@pytest.mark.parametrize("load", [factcg_examples, summedits_examples, fib_examples])
def test_document_pairs_fit_one_chunk_for_both_labels(data_dir, load):
    examples = load(data_dir)
    labels = {ex.label for ex in examples}
    assert labels == {"S", "X"}
    for label in labels:
        lengths = [len(ex.passage.split()) for ex in examples if ex.label == label]
        assert max(lengths) <= CHUNK_WORDS
        assert sum(lengths) / len(lengths) > 60  # documents, not sentences


def test_fib_gives_one_consistent_and_one_inconsistent_summary_per_document(data_dir):
    examples = fib_examples(data_dir)
    by_group = defaultdict(list)
    for ex in examples:
        by_group[ex.group].append(ex.label)
    assert all(sorted(labels) == ["S", "X"] for labels in by_group.values())
    assert not any("<t>" in ex.context or "<t>" in ex.passage for ex in examples)


def test_every_named_set_loads(data_dir):
    for name, load in CONTRASTIVE_SETS.items():
        assert load(data_dir), name

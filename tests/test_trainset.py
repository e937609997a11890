"""Training pairs: licences, deduplication and the hard negatives of ``side train verifier``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from side.training.trainset import IN_DOMAIN, SHIPPABLE, _nli_file, _scifact, build_examples

#: Folders under train/ whose licence is non-commercial or unknown (train/README.md).
EVALUATION_ONLY = ("anli", "averitec", "wikiqa", "trecqa", "qags", "healthver", "covidfact", "wanli",
                   "climate_fever", "wikifactcheck", "citation_integrity")


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_no_evaluation_only_or_evaluated_file_is_trained_on():
    for relative, licence in SHIPPABLE:
        assert not any(name in relative for name in EVALUATION_ONLY), relative
        assert "claim_dev" not in relative and "claims_dev" not in relative, relative
        assert licence


def test_the_same_pair_in_two_files_is_trained_once(tmp_path):
    pair = {"premise": "Paris is the capital of France.", "hypothesis": "Paris is in France.", "label": "entailment"}
    first = _write_jsonl(tmp_path / "a.jsonl", [pair, {**pair, "hypothesis": "Paris is small.", "label": "neutral"}])
    # Same pair with other spacing and case, and a binary label: the finer 3-way label wins.
    second = _write_jsonl(tmp_path / "b.jsonl", [
        {**pair, "premise": "paris is the capital of  France.", "label": "not_entailment"},
        {"premise": "x", "hypothesis": "", "label": "entailment"},
    ])
    seen: set = set()
    a = _nli_file(first, seen, "a")
    b = _nli_file(second, seen, "b")
    assert [(ex.passage, ex.label) for ex in a] == [(pair["premise"], "S"), (pair["premise"], "N")]
    assert b == []


def _tiny_scifact(tmp_path: Path) -> Path:
    docs = [
        (1, "Aspirin and heart attacks", ["Aspirin lowers the risk of heart attack in adults.",
                                           "The trial enrolled 4,000 adults.", "Aspirin was given daily."]),
        (2, "Aspirin in stroke", ["Aspirin reduced stroke in older adults.", "Heart attack rates did not change."]),
        (3, "Aspirin dosing", ["Daily aspirin dosing in adults varies.", "Heart attack prevention needs care."]),
        (4, "Coffee", ["Coffee drinkers sleep less.", "Sleep matters."]),
    ]
    _write_jsonl(tmp_path / "scifact" / "corpus.jsonl",
                 [{"doc_id": d, "title": t, "abstract": a} for d, t, a in docs])
    _write_jsonl(tmp_path / "scifact" / "claims_train.jsonl", [
        {"id": 7, "claim": "Aspirin lowers the risk of heart attack.", "cited_doc_ids": [1],
         "evidence": {"1": [{"sentences": [0], "label": "SUPPORT"}]}},
        {"id": 8, "claim": "Coffee reduces sleep.", "cited_doc_ids": [4], "evidence": {}},
    ])
    return tmp_path


def test_scifact_negatives_come_from_the_same_abstract_and_from_abstracts_not_cited(tmp_path):
    examples = _scifact(_tiny_scifact(tmp_path), group_start=0, negatives=2, other_sources=2)
    first = [ex for ex in examples if ex.context.startswith("Aspirin")]
    evidence = [ex for ex in first if ex.label == "S"]
    assert [ex.passage for ex in evidence] == ["Aspirin lowers the risk of heart attack in adults."]
    same = [ex for ex in first if ex.source == "scifact" and ex.label == "N"]
    assert len(same) == 2 and evidence[0].passage not in {ex.passage for ex in same}
    other = [ex for ex in first if ex.source == "scifact_other"]
    cited_sentences = {"Aspirin lowers the risk of heart attack in adults.", "The trial enrolled 4,000 adults.",
                       "Aspirin was given daily."}
    assert len(other) == 2 and all(ex.label == "N" and ex.passage not in cited_sentences for ex in other)
    # Evidence and every negative of one claim share a group (the ranking term compares them).
    assert len({ex.group for ex in first}) == 1
    assert first[0].group != next(ex.group for ex in examples if ex.context.startswith("Coffee"))


def test_in_domain_copies_are_separate_groups(data_dir):
    once = build_examples(data_dir)
    thrice = build_examples(data_dir, in_domain_repeat=3)
    count = lambda exs: Counter(ex.source for ex in exs)
    for source in IN_DOMAIN:
        assert count(thrice)[source] == 3 * count(once)[source] > 0
    assert count(thrice)["snli"] == count(once)["snli"]
    groups = Counter(ex.group for ex in thrice if ex.source in IN_DOMAIN)
    single = Counter(ex.group for ex in once if ex.source in IN_DOMAIN)
    assert len(groups) == 3 * len(single)
    assert max(groups.values()) == max(single.values())

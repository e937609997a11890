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


def _tiny_snli(tmp_path: Path) -> Path:
    rows = []
    for n, (premise, entailed, neutral, contradicted) in enumerate([
        ("A man plays a guitar on a stage .", "A man plays music .", "The man is famous .", "A woman sleeps ."),
        ("Two dogs run on a beach .", "Dogs are outside .", "The dogs are brothers .", "The dogs sleep indoors ."),
        ("A child reads a book .", "A child is reading .", "The book is about cats .", "The child is asleep ."),
    ]):
        for hypothesis, label in ((entailed, "entailment"), (neutral, "neutral"), (contradicted, "contradiction")):
            rows.append({"id": f"snli_dev_{n}_{label}", "premise": premise, "hypothesis": hypothesis, "label": label})
    _write_jsonl(tmp_path / "train" / "snli" / "snli_dev.pairs.jsonl", rows)
    return tmp_path


def test_joined_claims_are_unsupported_unless_the_source_backs_every_part(tmp_path):
    from side.training.trainset import joined_examples

    examples = joined_examples(_tiny_snli(tmp_path), per_file=10)
    assert {ex.source for ex in examples} == {"joined_snli"}
    # Per premise: joined with another premise's hypothesis (X against its own premise, S against both),
    # and with its own neutral (X) and contradicted (R) hypothesis.
    assert Counter(ex.label for ex in examples) == {"X": 6, "S": 3, "R": 3}
    for ex in examples:
        assert ", and " in ex.context and ex.context.endswith(".") and " ." not in ex.context
    crossed = [ex for ex in examples if ex.label == "S"]
    for ex in crossed:
        # Backed only when the passage holds both premises; the same claim against one premise is X.
        assert ex.passage.count(" . ") == 1
        alone = [o for o in examples if o.context == ex.context and o.label == "X"]
        assert alone and all(a.passage in ex.passage and a.passage != ex.passage for a in alone)
    contradicted = next(ex for ex in examples if ex.label == "R" and "guitar" in ex.passage)
    assert "a woman sleeps" in contradicted.context.lower() and "a man plays music" in contradicted.context.lower()


def test_a_later_clause_starts_lower_case_unless_it_starts_with_a_name():
    from side.training.trainset import _joined

    assert _joined("A man plays music .", "The man is famous .") == "A man plays music, and the man is famous."
    assert _joined("Paris is in France.", "London is big .") == "Paris is in France, and London is big."


def test_joined_claims_come_from_fever_and_snli(data_dir):
    from side.training.trainset import joined_examples

    joined = Counter((ex.source, ex.label) for ex in joined_examples(data_dir, per_file=50))
    # FEVER's pairs are supported or refuted (no neutral hypothesis); SNLI's have all three.
    assert joined[("joined_fever_rte", "S")] == joined[("joined_fever_rte", "X")] == 50
    assert joined[("joined_snli", "X")] > joined[("joined_snli", "S")] == 100


def test_wice_sub_claims_are_not_supported_and_their_supported_part_is_when_asked(data_dir):
    from side.training.trainset import WICE_TRAIN, _wice_train, supported_part

    assert not any(ex.label == "S" for ex in _wice_train(data_dir, group_start=0, negatives=1))
    examples = _wice_train(data_dir, group_start=0, negatives=1, supported_parts=True)
    record = json.loads((data_dir / WICE_TRAIN).read_text(encoding="utf-8").splitlines()[0])
    first = [ex for ex in examples if ex.group == 0]
    full = next(ex for ex in first if ex.label == "X")
    part = next(ex for ex in first if ex.label == "S")
    assert full.context.endswith(record["claim"])
    assert part.context.endswith(supported_part(record["claim"], record["claim_tokens"], record["non_supported_spans"]))
    assert part.passage == full.passage  # the same gold sentences on both sides
    assert len(part.context) < len(full.context)

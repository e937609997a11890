"""Metrics of `side eval verify`, and a small real run of each evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.cli import main
from side.data import SciFactClaim
from side.evaluation.verify import (
    AbstractPrediction,
    _Counts,
    _score_abstract,
    abstract_prediction,
    auroc,
    citation_integrity_level,
    evaluate_scifact,
    keep_most_confident,
    ndcg,
    precision_at_recall,
    scifact_level,
)
from side.verify.crossencoder import VerdictLabel
from side.verify.evidence import Candidate
from side.verify.levels import LevelThresholds
from side.verify.verifier import Prepared, Query, Verdict

from conftest import need_data


def prepared(label: str, rows: list[list[float]], indices: list[int]) -> Prepared:
    """A judged abstract: candidate sentences at ``indices`` with cross-encoder rows, then the window row."""
    candidates = [Candidate(i, f"sentence {i}", 0.0, 0.0, 0.0) for i in indices]
    probabilities = np.array(rows + [[0.2, 0.2, 0.6]])
    return Prepared(Query("claim"), [f"sentence {i}" for i in range(10)], candidates,
                    Verdict(label=label, score=0.5), probabilities=probabilities)


def test_auroc_of_perfect_and_reversed_rankings():
    positive = np.array([1, 1, 0, 0, 0], dtype=bool)
    assert auroc(positive, np.array([5, 4, 3, 2, 1])) == 1.0
    assert auroc(positive, np.array([1, 2, 3, 4, 5])) == 0.0
    assert np.isnan(auroc(np.ones(3, dtype=bool), np.arange(3)))


def test_precision_at_recall_stops_at_first_cut_reaching_recall():
    # 4 positives; 15% recall needs 1 of them; it is found at rank 3.
    positive = np.array([0, 0, 1, 1, 1, 1, 0], dtype=bool)
    score = -np.arange(7)
    assert precision_at_recall(positive, score, 0.15) == pytest.approx(1 / 3)
    assert precision_at_recall(positive, score, 1.0) == pytest.approx(4 / 6)


def test_ndcg_is_one_for_ideal_order():
    assert ndcg([3, 1, 9], {3, 1}, 5) == pytest.approx(1.0)
    assert 0 < ndcg([9, 3, 1], {3, 1}, 5) < 1


def test_abstract_counting_needs_label_and_a_whole_gold_set_for_rationale():
    gold = [{"sentences": [1, 2], "label": "SUPPORT"}]
    counts = _Counts()
    _score_abstract(counts, "SUPPORT", {1}, gold)
    _score_abstract(counts, "SUPPORT", {1, 2, 5}, gold)
    _score_abstract(counts, "REFUTE", {1, 2}, gold)
    _score_abstract(counts, None, set(), gold)
    assert (counts.predicted, counts.gold, counts.label_only, counts.label_rationale) == (3, 4, 2, 1)


def test_refuting_rationale_is_chosen_by_refute_probability():
    item = prepared("REFUTES", [[0.6, 0.1, 0.3], [0.05, 0.9, 0.05], [0.1, 0.7, 0.2], [0.3, 0.4, 0.3]], [4, 7, 2, 9])
    prediction = abstract_prediction(item)
    assert prediction.label == "REFUTE"
    assert prediction.rationale == {7, 2}  # not sentence 4, the most supporting one
    assert prediction.confidence == 0.9


def test_rationale_falls_back_to_the_most_probable_sentence():
    item = prepared("SUPPORTS", [[0.4, 0.2, 0.4], [0.45, 0.1, 0.45]], [0, 1])
    assert abstract_prediction(item) == AbstractPrediction("SUPPORT", frozenset({1}), 0.45)
    assert abstract_prediction(item, threshold=0.4).rationale == {0, 1}
    unlabelled = prepared("NOT ENOUGH INFO", [[0.3, 0.1, 0.6]], [0])
    assert abstract_prediction(unlabelled) == AbstractPrediction(None, frozenset(), 0.3)


def test_rationale_keeps_at_most_three_most_probable_sentences():
    rows = [[p, 0.0, 1 - p] for p in (0.6, 0.95, 0.7, 0.99, 0.8)]
    assert abstract_prediction(prepared("SUPPORTS", rows, [0, 1, 2, 3, 4])).rationale == {3, 1, 4}


def test_open_setting_drops_labels_far_below_the_claims_best_abstract():
    strong = AbstractPrediction("SUPPORT", frozenset({1}), 0.95)
    close = AbstractPrediction("REFUTE", frozenset({2}), 0.9)
    weak = AbstractPrediction("SUPPORT", frozenset({3}), 0.6)
    unlabelled = AbstractPrediction(None, frozenset(), 0.99)
    kept = keep_most_confident({"a": strong, "b": close, "c": weak, "d": unlabelled})
    assert [doc for doc, p in kept.items() if p.label] == ["a", "b"]
    assert kept["c"].confidence == 0.6 and kept["d"] == unlabelled
    assert keep_most_confident({"d": unlabelled}) == {"d": unlabelled}


def test_scifact_gold_levels():
    claim = SciFactClaim(1, "c", {"1": [{"sentences": [0], "label": "SUPPORT"}],
                                  "2": [{"sentences": [1], "label": "REFUTE"}]}, ("1", "2", "3"))
    assert [scifact_level(claim, d) for d in ("1", "2", "3", "9")] == [
        "supported", "not_supported", "not_supported", "not_supported"]
    assert citation_integrity_level(claim, "2") == "partially_supported"  # Citation-Integrity reads REFUTE apart


class _ScoreByAbstract:
    """A verifier whose support score is read off each abstract's first sentence ("score 0.9")."""

    levels = LevelThresholds(supported=0.5, not_supported=0.25, report=0.0, flag=0.4)

    def run(self, pairs):
        out = []
        for query, sentences in pairs:
            score = float(sentences[0].split()[1])
            out.append(Prepared(query, list(sentences), [],
                                Verdict(VerdictLabel.NOT_ENOUGH_INFO, score, level=self.levels.level(score))))
        return out


def _scifact_files(tmp_path):
    docs = {"1": 0.9, "2": 0.1, "3": 0.2, "4": 0.3}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"doc_id": int(d), "title": f"T{d}", "abstract": [f"score {v}", "More."]})
                              + "\n" for d, v in docs.items()))
    claims = tmp_path / "claims.jsonl"
    support, refute = [{"sentences": [0], "label": "SUPPORT"}], [{"sentences": [0], "label": "REFUTE"}]
    rows = [{"id": 1, "claim": "one", "evidence": {"1": support}, "cited_doc_ids": [1]},
            {"id": 2, "claim": "two", "evidence": {"2": refute}, "cited_doc_ids": [2]},
            {"id": 3, "claim": "three", "evidence": {}, "cited_doc_ids": [3]},
            {"id": 4, "claim": "four", "evidence": {"4": support}, "cited_doc_ids": [4]}]
    claims.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return claims, corpus


def test_scifact_operating_points_in_both_settings(tmp_path, capsys):
    """Oracle: (1 .9 S), (2 .1 NS, refuted), (3 .2 NS, no rationale), (4 .3 PS, supported): Side's
    levels flag 2, 3, 4: precision 2/3, recall 1, one of the two supported flagged. Open: claim one
    also retrieves abstract 2 (gold not supported, scored .1): 4 flagged, 3 right, recall 1."""
    from side.cli.eval_verify import _print_tables

    claims, corpus = _scifact_files(tmp_path)
    verifier = _ScoreByAbstract()
    oracle = evaluate_scifact(verifier, claims, corpus, points_level=scifact_level)
    rows = {row["point"]: row for row in oracle["operating_points"]}
    assert (rows["levels"]["flagged"], rows["levels"]["precision"], rows["levels"]["recall"]) == (3, 2 / 3, 1.0)
    assert rows["levels"]["supported_flagged"] == 0.5
    assert rows["10% supported flagged"]["cut"] == 0.3 and rows["10% supported flagged"]["flagged"] == 3
    assert rows["supported cut"]["unsure_share"] == 0.0
    assert rows["not supported cut"]["flagged"] == 2 and rows["not supported cut"]["precision"] == 1.0
    assert rows["not supported cut"]["unsure_share"] == 0.25  # abstract 4, between .25 and .5
    assert "levels" not in oracle  # the level tables stay Citation-Integrity's

    retrieved = {"one": ["1", "2"], "two": ["2"], "three": ["3"], "four": ["4"]}
    opened = evaluate_scifact(verifier, claims, corpus, retrieve=retrieved.__getitem__, points_level=scifact_level)
    rows = {row["point"]: row for row in opened["operating_points"]}
    assert (rows["levels"]["flagged"], rows["levels"]["precision"], rows["levels"]["recall"]) == (4, 0.75, 1.0)
    assert "operating_points" not in evaluate_scifact(verifier, claims, corpus, retrieve=retrieved.__getitem__)

    _print_tables({"scifact_oracle": oracle, "scifact_open": opened})
    out = capsys.readouterr().out
    assert "scifact_oracle: needs review at operating points" in out
    assert "scifact_open: needs review at operating points" in out


def test_eval_verify_cli_on_a_slice_of_every_dataset(capsys):
    need_data("wice/claim_dev.jsonl")
    need_data("scifact/claims_dev.jsonl")
    need_data("citation_integrity/claims_dev.jsonl")
    need_data("wice/non_supported_tokens_dev.jsonl")
    assert main(["eval", "verify", "all", "--limit", "6", "--setting", "oracle", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)
    assert set(results) == {"wice", "scifact_oracle", "citation-integrity_oracle", "unsupported"}
    assert results["unsupported"]["claims"] == 6
    wice = results["wice"]
    assert wice["claims"] == 6
    for method in ("verifier", "baseline_bm25_max", "baseline_minilm_max_cosine"):
        assert set(wice[method]) == {"auroc_not_supported", "auroc_not_fully_supported", "precision_at_15_recall"}
    assert 0.0 <= wice["evidence"]["recall_at_5"] <= 1.0
    for name in ("scifact_oracle", "citation-integrity_oracle"):
        f1 = results[name]["abstract_label_only"]
        assert 0.0 <= f1["precision"] <= 1.0 and 0.0 <= f1["f1"] <= 1.0
        points = [row["point"] for row in results[name]["operating_points"]]
        assert points[:4] == ["levels", "supported cut", "not supported cut", "report cut"]

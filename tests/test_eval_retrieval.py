"""Retrieval evaluation: metric definitions, and a small real SciFact subset end to end."""

from __future__ import annotations

import json
import math

import pytest

from side.data import load_scifact_claims
from side.evaluation.retrieval import (
    METHODS,
    RetrievalReport,
    document_retrieval,
    evaluate_evidence,
    evaluate_wice_recovery,
    ndcg_at,
    recall_at,
    score_rankings,
    success_at,
    wice_queries,
)
from side.extract.claims import CIT, SEP
from side.retrieval.corpus import documents_from_scifact

from conftest import need_data


def test_metrics_on_hand_made_rankings():
    ranked = ["a", "b", "c", "d"]
    assert recall_at(ranked, {"b", "z"}, 2) == 0.5
    assert success_at(ranked, {"c"}, 2) == 0.0 and success_at(ranked, {"c"}, 3) == 1.0
    assert ndcg_at(ranked, {"a"}, 10) == 1.0
    assert ndcg_at(ranked, {"b"}, 10) == pytest.approx(1 / math.log2(3))
    scores = score_rankings([ranked, ranked], [{"a"}, {"d"}], [("SR", 1), ("R", 4)])
    assert scores == {"P@1": 0.5, "R@4": 1.0}


def test_report_round_trip():
    report = RetrievalReport("scifact", 3, {"bm25": {"R@3": 0.5}}, {"documents": 10})
    assert RetrievalReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report


def test_wice_queries_follow_side():
    record = {"claim": "He won the prize.", "meta": {"claim_title": "Jane Doe", "claim_section": "Career.",
                                                     "claim_context": "She moved to Paris."}}
    sparse, dense = wice_queries(record)
    assert sparse == "He won the prize. Jane Doe"
    assert dense == f"Jane Doe{SEP}Career{SEP}She moved to Paris. He won the prize.{CIT}"


def test_evidence_ranking_on_a_small_wice_file(tmp_path):
    rows = [
        {"claim": "The bridge opened in 1932.", "label": "supported", "supporting_sentences": [[2]],
         "evidence": ["(meta data) TITLE: Bridge", "Tolls are collected daily.",
                      "The bridge opened to traffic in 1932.", "It is painted grey."], "meta": {"id": "d1"}},
        {"claim": "No gold here.", "label": "not_supported", "supporting_sentences": [],
         "evidence": ["Nothing."], "meta": {"id": "d2"}},
    ]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = evaluate_evidence(path, tmp_path / "cache", k=1)
    assert report.n_queries == 1 and set(report.metrics) == set(METHODS)
    assert report.metrics["bm25"]["R@1"] == 1.0


def test_scifact_subset_beats_random_and_hybrid_is_between(tmp_path):
    claims = [c for c in load_scifact_claims(need_data("scifact/claims_dev.jsonl")) if c.evidence][:20]
    gold_ids = {d for c in claims for d in c.evidence}
    documents, others = [], 0
    for doc in documents_from_scifact(need_data("scifact/corpus.jsonl")):
        if doc.doc_id in gold_ids or others < 60:
            others += doc.doc_id not in gold_ids
            documents.append(doc)
    texts = [c.claim for c in claims]
    metrics = document_retrieval(documents, texts, texts, [set(c.evidence) for c in claims], tmp_path,
                                 [("R", 3), ("R", 10), ("nDCG", 10)], words=1000, stride=500)
    assert set(metrics) == set(METHODS)
    for values in metrics.values():
        assert all(0.0 <= v <= 1.0 for v in values.values())
    for fusion in ("hybrid-union", "hybrid-rrf"):
        for name in ("R@3", "R@10"):
            assert metrics[fusion][name] >= min(metrics["bm25"][name], metrics["dense"][name])
    random_recall_at_10 = 10 / len(documents)
    assert metrics["bm25"]["R@10"] > 3 * random_recall_at_10
    assert metrics["dense"]["R@10"] > 3 * random_recall_at_10


def test_wice_recovery_treats_identical_pages_as_one_document(tmp_path):
    page = ["(meta data) TITLE: Bridge", "The bridge opened to traffic in 1932.", "It is painted grey."]
    rows = [
        {"claim": "The bridge opened in 1932.", "label": "supported", "supporting_sentences": [[1]],
         "evidence": page, "meta": {"id": "d1", "claim_title": "Bridge", "claim_section": "History."}},
        {"claim": "It is grey.", "label": "supported", "supporting_sentences": [[2]],
         "evidence": page, "meta": {"id": "d2", "claim_title": "Bridge", "claim_section": "Design."}},
    ]
    path = tmp_path / "w.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    report = evaluate_wice_recovery(path, tmp_path / "cache")
    assert report.n_queries == 2 and report.settings["documents"] == 1
    assert all(values["P@1"] == 1.0 for values in report.metrics.values())

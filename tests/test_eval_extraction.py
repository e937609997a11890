"""Extraction evaluation: the metric itself, and trafilatura vs. the naive baseline on real pages."""

from __future__ import annotations

import json

import pytest

from side.cli import main
from side.errors import DataNotFoundError
from side.evaluation.extraction import (
    BENCHMARK_SUBDIR,
    PageScore,
    evaluate_extraction,
    naive_extractor,
    overlap,
    side_extractor,
)

from conftest import need_data


def test_overlap_bag_of_words():
    assert overlap("the cat sat", "the cat sat") == (3, 0, 0)
    assert overlap("the cat sat", "The CAT, sat on the mat!") == (3, 3, 0)
    assert overlap("the cat sat on the mat", "the mat") == (2, 0, 4)
    assert overlap("a b c d e", "a b c d x", n=4) == (1, 1, 1)


def test_page_score_edge_cases():
    assert PageScore("k", 0, 0, 5, 0.0).precision == 0.0  # nothing extracted
    assert PageScore("k", 0, 0, 0, 0.0).f1 == 1.0  # nothing to extract, nothing extracted
    score = PageScore("k", 6, 2, 4, 0.0)
    assert score.precision == pytest.approx(0.75)
    assert score.recall == pytest.approx(0.6)
    assert score.f1 == pytest.approx(2 * 0.75 * 0.6 / 1.35)


def test_trafilatura_beats_naive_baseline_on_real_pages():
    need_data(str(BENCHMARK_SUBDIR))
    data_dir = need_data("")
    side, naive = evaluate_extraction(
        data_dir, limit=8, extractors={"side": side_extractor, "naive": naive_extractor}
    )
    assert side.pages == naive.pages == 8
    assert side.empty_pages == 0
    assert side.macro_f1 > naive.macro_f1
    assert side.macro_f1 > naive.macro_precision
    assert side.macro_precision > naive.macro_precision  # the point of extraction: less boilerplate
    assert side.micro_f1 > naive.micro_f1


def test_missing_benchmark_raises(tmp_path):
    with pytest.raises(DataNotFoundError, match="article extraction benchmark"):
        evaluate_extraction(tmp_path)


def test_cli_missing_data_is_one_line_exit_2(tmp_path, capsys):
    assert main(["eval", "extraction", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("side: error: article extraction benchmark not found")


def test_cli_json_on_a_few_pages(capsys):
    need_data(str(BENCHMARK_SUBDIR))
    assert main(["-q", "eval", "extraction", "--data-dir", str(need_data("")), "--limit", "3", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    names = [r["name"] for r in payload["results"]]
    assert "naive visible text" in names and any(n.startswith("side") for n in names)
    assert all(r["pages"] == 3 for r in payload["results"])

"""The judge evaluation's metrics and its reader of labelled citations."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.cli import main
from side.errors import InputError
from side.evaluation.judge import (
    Outcome,
    flags_at_share,
    method_metrics,
    needs_review_f1,
    normalize_label,
    ranking_metrics,
    read_citations,
    summarize,
)
from side.verify.cascade import CascadeSettings
from side.verify.judge import JudgeVerdict, QuoteCheck
from side.verify.levels import VerdictLevel


def test_labels_in_every_spelling_the_benchmarks_use():
    assert normalize_label("Partially Supported") == "partially_supported"
    assert normalize_label("not_supported") == "not_supported"
    assert normalize_label(" supported ") == "supported"
    assert normalize_label("cannot check") == "cannot_check"
    assert normalize_label("refuted") is None
    assert normalize_label(3) is None


def test_reader_takes_the_generic_schema(tmp_path):
    path = tmp_path / "citations.jsonl"
    path.write_text(json.dumps({"claim": "A.", "source_text": "Text.", "label": "partially supported",
                                "title": "T", "section": "S", "context": "C"}) + "\n\n"
                    + json.dumps({"claim": "B.", "source_text": "More.", "label": "supported"}) + "\n")
    first, second = read_citations(path)
    assert (first.claim, first.label, first.title, first.section, first.context) == (
        "A.", "partially_supported", "T", "S", "C")
    assert (second.label, second.title, second.id) == ("supported", "", "2")
    assert len(read_citations(path, limit=1)) == 1


@pytest.mark.parametrize("line, message", [
    ('{"claim": "A.", "label": "supported"}', "missing 'source_text'"),
    ('{"claim": "A.", "source_text": "x", "label": "maybe"}', "label 'maybe'"),
    ('{"claim": 3, "source_text": "x", "label": "supported"}', "'claim' must be a string"),
    ('not json', "invalid JSON"),
])
def test_bad_records_name_their_line(tmp_path, line, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=message):
        read_citations(path)


@pytest.mark.parametrize("content", ['{"claim": "A.", "label": "supported"}\n', "", "[1, 2]\n"])
def test_bad_citations_file_is_one_line_and_exit_2(tmp_path, capsys, content):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    assert main(["eval", "verify", "citations", "--claims", str(path), "--judge", "http://127.0.0.1:9/v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_needs_review_f1_by_hand():
    gold = np.array([True, True, False, False])
    assert needs_review_f1(gold, np.array([True, False, True, False])) == pytest.approx(0.5)
    assert needs_review_f1(gold, np.array([True, True, False, False])) == 1.0
    assert needs_review_f1(gold, np.zeros(4, dtype=bool)) == 0.0


def test_flags_at_share_flags_that_share_of_the_good():
    score = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 0.05, 0.15])
    good = np.array([True] * 10 + [False, False])
    flagged = flags_at_share(score, good, 0.30)
    assert flagged[good].mean() == pytest.approx(0.3)
    assert flagged[~good].all()
    coarse = flags_at_share(np.array([0.5, 0.5, 0.5, 1.0]), np.array([True, True, True, True]), 0.3)
    assert coarse.tolist() == [True, True, True, False]  # ties flag together


def test_method_metrics_on_a_hand_made_set():
    gold = ["supported", "supported", "partially_supported", "not_supported"]
    score = np.array([0.9, 0.6, 0.5, 0.1])
    levels = ["supported", "partially_supported", "partially_supported", "not_supported"]
    m = method_metrics(gold, score, levels)
    assert m["auroc_not_supported"] == 1.0 and m["auroc_not_fully_supported"] == 1.0
    assert m["needs_review_f1"] == pytest.approx(0.8)  # 3 flagged, 2 right, both found
    assert m["good_flagged"] == 0.5
    assert m["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)


def _verdict(level: VerdictLevel, found: bool = True, confidence: float = 1.0) -> JudgeVerdict:
    """A reviewed verdict: a quote found is one Side's verifier backed (side.verify.cascade.review_verdict)."""
    return JudgeVerdict(level, ("a quote of words",) if found else (), "", confidence, "m", quote_found=found,
                        prompt_tokens=500, latency_s=1.0,
                        quote_check=QuoteCheck.BACKED if found else QuoteCheck.UNCHECKED)


def test_cascade_takes_the_judges_accepted_verdicts_inside_the_band_only():
    settings = CascadeSettings(mode="uncertain", band_low=0.25, band_high=0.75)
    outcomes = [
        Outcome("not_supported", 0.5, "partially_supported", 0.1, True, _verdict(VerdictLevel.NOT_SUPPORTED), 2.0),
        Outcome("supported", 0.6, "partially_supported", 0.1, True, _verdict(VerdictLevel.SUPPORTED), 4.0),
        # Supported without a quote found: the judge said it, the cascade never shows it.
        Outcome("partially_supported", 0.4, "partially_supported", 0.1, True,
                _verdict(VerdictLevel.SUPPORTED, found=False), 2.0),
        Outcome("supported", 0.9, "supported", 0.1, False, _verdict(VerdictLevel.NOT_SUPPORTED), 2.0),
        Outcome("not_supported", 0.1, "not_supported", 0.1, False, None, 0.5, "JudgeUnavailable: down"),
    ]
    report = summarize(outcomes, settings)
    assert report["cascade"]["macro_f1"] == 1.0  # every level right: the band's verdicts, Side's outside
    assert report["judge"]["macro_f1"] < 1.0
    assert report["side"]["macro_f1"] < 1.0
    cost = report["cost"]
    assert (cost["judge_calls"], cost["judge_answers"], cost["judge_errors"], cost["quotes_not_found"]) == (5, 4, 1, 1)
    assert cost["cascade_calls"] == 3 and cost["cascade_share"] == pytest.approx(0.6)
    assert cost["prompt_tokens_per_citation"] == 500
    assert cost["cascade_prompt_tokens_per_citation"] == pytest.approx(300)


def _ranking_outcomes() -> list[Outcome]:
    """Six judged citations and one labelled cannot check; the AUROCs below are counted by hand."""
    def outcome(gold: str, score: float, level: str, unsure: bool, judge: JudgeVerdict | None) -> Outcome:
        return Outcome(gold, score, level, 0.1, True, judge, 1.0, "" if judge else "JudgeUnavailable: down",
                       side_unsure=unsure)

    return [
        outcome("not_supported", 0.2, "not_supported", False, _verdict(VerdictLevel.NOT_SUPPORTED)),
        outcome("partially_supported", 0.6, "partially_supported", True, _verdict(VerdictLevel.SUPPORTED)),
        outcome("supported", 0.7, "partially_supported", True, _verdict(VerdictLevel.SUPPORTED)),
        outcome("supported", 0.9, "supported", False, _verdict(VerdictLevel.NOT_SUPPORTED)),
        outcome("partially_supported", 0.3, "not_supported", False, None),  # no verdict: Side's level
        # Partially supported without a quote: the model's level, never shown.
        outcome("supported", 0.85, "supported", False, _verdict(VerdictLevel.PARTIALLY_SUPPORTED, found=False)),
        outcome("cannot_check", 0.5, "partially_supported", True, _verdict(VerdictLevel.NOT_SUPPORTED)),
    ]


def test_ranking_figures_by_hand():
    """Needs review: 1, 2, 5; supported: 3, 4, 6 (9 pairs; a tie counts half).

    Judge's level alone (NS 2, PS 1, S 0; 5 is Side's NS): 1 = (2, 2, 2) against 3, 4, 6 (0, 2, 1):
    1 + 0.5 + 1; 2 = 0: 0.5 + 0 + 0; 5 = 2: 2.5. 5.5 / 9.
    Then Side (side.ranking, (band + 1 - score) / 4): 1 .95, 2 .1 (judge's supported), 5 .925
    (Side's sure NS) against 3 .075, 4 .775 (judge's NS), 6 .0375 (Side's supported: the judge's PS
    was not accepted): only 2 < 4. 8 / 9.
    Side alone: 1 .95, 2 .35 (unsure), 5 .925 against 3 .325 (unsure), 4 .025, 6 .0375: 9 / 9.
    """
    m = ranking_metrics(_ranking_outcomes())
    assert (m["citations"], m["needs_review"]) == (6, 3)
    assert m["judge_level"] == pytest.approx(5.5 / 9)
    assert m["judge_level_then_side"] == pytest.approx(8 / 9)
    assert m["side"] == pytest.approx(1.0)
    assert (m["judge_level_from_side"], m["shown_level_from_side"], m["unscored"]) == (1, 2, 0)
    report = summarize(_ranking_outcomes(), CascadeSettings(mode="uncertain", band_low=0.25, band_high=0.75))
    assert report["ranking"] == m
    assert "ranking" not in summarize(_ranking_outcomes(), CascadeSettings(mode="uncertain", band_low=0.25,
                                                                           band_high=0.75), judged=False)


def test_ranking_puts_citations_nobody_scored_last():
    outcomes = [Outcome("not_supported", 0.0, "cannot_check", 0.1, False, None, 0.0, "JudgeUnavailable: down"),
                Outcome("supported", 0.9, "supported", 0.1, False, None, 0.0, "JudgeUnavailable: down")]
    m = ranking_metrics(outcomes)
    assert m["unscored"] == 1 and m["judge_level_then_side"] == 0.0 and m["side"] == 0.0
    assert m["judge_level"] == 0.0  # cannot check ranks below supported


def test_ranking_table_is_printed_with_the_methods(capsys):
    from side.cli.eval_judge import _print

    report = summarize(_ranking_outcomes(), CascadeSettings(mode="uncertain", band_low=0.25, band_high=0.75))
    report.update(judge_model="m", note="note")
    _print(report, "citations")
    out = " ".join(capsys.readouterr().out.split())
    assert "ranking needs review above supported (6 citations, 3 need review)" in out
    assert "judge's level alone │ 0.611" in out
    assert "then Side's failure score (side.ranking) │ 0.889" in out
    assert "Side alone (side.ranking) │ 1.000" in out
    assert "Side's level for the 1 citations where the judge gave no verdict" in out


def test_eval_verify_citations_with_a_judge_on_loopback(tmp_path, capsys):
    """The whole command: the shipped verifier, a real HTTP server on 127.0.0.1 as the judge."""
    from harness.llm import ScriptedServer, chat_answer

    source = "Alsea is a Mexican restaurant operator. It was founded in 1990 in Mexico City by the Torrado family."
    rows = [{"claim": "Alsea was founded in 1990.", "source_text": source, "label": "supported", "title": "Alsea"},
            {"claim": "Alsea was founded in 1850 in Paris.", "source_text": source, "label": "not supported"},
            {"claim": "Alsea was founded in 1990 by Carlos Slim.", "source_text": source,
             "label": "partially supported"}]
    path = tmp_path / "citations.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    answer = json.dumps({"level": "supported", "quotes": ["It was founded in 1990 in Mexico City"],
                         "unsupported": "", "confidence": 0.8})
    with ScriptedServer(chat_answer(answer, prompt_tokens=321)) as server:
        code = main(["eval", "verify", "citations", "--claims", str(path), "--judge", server.url,
                     "--judge-model", "scripted", "--json"])
        asked = len(server.requests)
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert asked == 3 and report["cost"]["judge_answers"] == 3
    assert report["cost"]["prompt_tokens_per_citation"] == 321 and report["cost"]["quotes_not_found"] == 0
    assert report["judge_model"] == "scripted" and "27B" in report["note"] and "0.791" in report["note"]
    assert {"side", "judge", "cascade"} <= set(report)
    assert report["judge"]["macro_f1"] == pytest.approx(1 / 3 * 0.5)  # always supported: one level of three, P 1/3
    ranking = report["ranking"]
    assert (ranking["citations"], ranking["needs_review"], ranking["judge_level_from_side"]) == (3, 2, 0)
    assert ranking["judge_level"] == 0.5  # always supported: every citation ties
    assert 0.0 <= ranking["side"] <= 1.0 and 0.0 <= ranking["judge_level_then_side"] <= 1.0


def test_judge_url_outside_loopback_and_the_allow_list_is_refused(tmp_path, capsys):
    path = tmp_path / "citations.jsonl"
    path.write_text(json.dumps({"claim": "A.", "source_text": "A.", "label": "supported"}) + "\n")
    assert main(["eval", "verify", "citations", "--claims", str(path), "--judge", "https://example.org/v1"]) == 2
    err = capsys.readouterr().err.strip()
    assert "allow_endpoints" in err and len(err.splitlines()) == 1

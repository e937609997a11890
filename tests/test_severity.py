"""What is missing from a weak citation, its severity, and the operating-point table."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from side.evaluation.verify import operating_points, severity_metrics, verdict_severities
from side.extract.claims import Citation, Claim
from side.extract.wikitext import extract_claims, is_living_person
from side.pipeline import Pipeline
from side.results import Result, SourceStatus
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.severity import MissingKind, Severity, classify_missing, holds_fact, missing_and_severity, severity
from side.verify.verifier import Verdict


@pytest.mark.parametrize(("words", "claim", "kind"), [
    (("24 October 1996",), "He was born on 24 October 1996 in Leeds.", MissingKind.DATE),
    (("early September",), "Work began in early September.", MissingKind.DATE),
    (("1990s",), "The band was popular in the 1990s.", MissingKind.DATE),
    (("15 people",), "The crash killed 15 people.", MissingKind.NUMBER),
    (("fifth studio",), "It is the band's fifth studio album.", MissingKind.NUMBER),
    (("second-seeded",), "She beat the second-seeded player.", MissingKind.NUMBER),
    (("40%",), "Turnout fell by 40%.", MissingKind.NUMBER),
    (("Cartoon Network",), "The show aired on Cartoon Network in the US.", MissingKind.NAME),
    (("New York",), "New York hosted the event.", MissingKind.NAME),
    (("Popular",), "Popular with researchers, the tool spread.", MissingKind.WORDING),
    (("Heavy winds",), "It rained. Heavy winds followed.", MissingKind.WORDING),
    (("commercial buildings", "obsolete"), "The commercial buildings are obsolete.", MissingKind.WORDING),
    (("triumph of design",), 'He called it "a triumph of design".', MissingKind.QUOTATION),
    (('"Ray"',), 'Detective Raymond "Ray" Velcoro', MissingKind.QUOTATION),
])
def test_unsupported_words_are_classed_in_their_claim(words, claim, kind):
    assert classify_missing(words, claim) is kind


def test_a_date_outranks_a_name_and_a_judges_string_is_split_into_phrases():
    claim = "Alsea was founded in 1990 by Carlos Slim."
    assert classify_missing(("Carlos Slim", "1990"), claim) is MissingKind.DATE
    assert classify_missing("Carlos Slim", claim) is MissingKind.NAME
    assert classify_missing("the founder; in 1990", claim) is MissingKind.DATE


def test_no_words_named_classifies_the_whole_claim():
    assert classify_missing((), "Alsea was founded in 1990.") is MissingKind.DATE
    assert classify_missing("", "The weather was mild and dry.") is MissingKind.WORDING
    assert classify_missing((), "") is MissingKind.WORDING


def test_severity_is_high_for_facts_and_for_any_gap_about_a_living_person():
    assert severity(MissingKind.WORDING) is Severity.LOW
    assert severity(MissingKind.WORDING, living_person=True) is Severity.HIGH
    for kind in (MissingKind.NUMBER, MissingKind.DATE, MissingKind.NAME, MissingKind.QUOTATION):
        assert severity(kind) is Severity.HIGH
    assert missing_and_severity(("mild",), "The weather was mild.") == (MissingKind.WORDING, Severity.LOW)


def test_holds_fact_reads_the_marked_span():
    assert holds_fact(("Cartoon Network",), "The show aired on Cartoon Network.")
    assert holds_fact(("three older",), "He has three older brothers.")
    assert not holds_fact(("popular", "researchers"), "It is popular with researchers.")


def test_severity_precision_against_marked_spans():
    claims = ["He was born in 1996 in Leeds.", "It is popular with researchers.", "The show aired on Cartoon Network."]
    gold = [("1996",), ("popular",), ("Cartoon Network",)]
    predicted = [("Leeds",), ("researchers",), ()]  # the last names nothing: the claim holds a name
    out = severity_metrics(claims, gold, predicted)
    assert (out["predicted_high"], out["gold_fact"]) == (2, 2)
    assert out["precision_high"] == 1.0 and out["recall_high"] == 1.0
    out = severity_metrics(claims, [("born",), ("popular",), ("aired",)], predicted)
    assert out["precision_high"] == 0.0 and np.isnan(out["recall_high"])


WIKITEXT = ("'''Ann Smith''' (born 1970) is a writer.<ref>{{cite web |url=https://example.org/a |title=A}}</ref>\n\n"
            "[[Category:1970 births]]\n")


def test_living_people_category_marks_the_claims():
    assert is_living_person("x [[Category:Living people]]") and is_living_person("[[category: Living_people|Smith]]")
    assert not is_living_person("[[Category:Dead people]] [[:Category:Living people]]")
    assert not any(c.living_person for c in extract_claims(WIKITEXT, "Ann Smith"))
    claims = extract_claims(WIKITEXT + "[[Category:Living people]]\n", "Ann Smith")
    assert claims and all(c.living_person for c in claims)
    back = Claim.from_dict(json.loads(json.dumps(claims[0].to_dict())))
    assert back.living_person
    assert "living_person" not in extract_claims(WIKITEXT, "Ann Smith")[0].to_dict()


def _claim(text: str, living: bool = False) -> Claim:
    return Claim("T", (), text, text, Citation("c1", "template", url="https://example.org"), living_person=living)


def _decided(verdict: Verdict, living: bool = False) -> Result:
    result = Result(_claim("The tool is popular with researchers.", living), SourceStatus.FETCHED, verdict)
    stub = SimpleNamespace(flag_threshold=0.5, levels=LevelThresholds(0.5, 0.3, 0.1))
    Pipeline._decide(stub, result, [])  # type: ignore[arg-type]
    return result


def test_the_pipeline_sets_missing_and_severity_on_needs_review_verdicts_only():
    weak = Verdict("NOT ENOUGH INFO", 0.4, level=VerdictLevel.PARTIALLY_SUPPORTED, unsupported=("popular",))
    result = _decided(weak)
    assert result.flagged and (result.missing, result.severity) == (MissingKind.WORDING, Severity.LOW)
    assert _decided(weak, living=True).severity is Severity.HIGH
    good = _decided(Verdict("SUPPORTS", 0.9, level=VerdictLevel.SUPPORTED))
    assert good.missing is None and good.severity is None
    data = json.loads(json.dumps(result.to_dict()))
    assert (data["missing"], data["severity"]) == ("wording", "low")
    back = Result.from_dict(data)
    assert (back.missing, back.severity) == (MissingKind.WORDING, Severity.LOW)
    assert Result.from_dict({**data, "missing": None, "severity": "odd"}).severity is None


def test_operating_points_on_a_hand_made_set():
    S, P, N = "supported", "partially_supported", "not_supported"
    gold = [S, S, S, S, P, N, N, S]
    score = np.array([0.9, 0.8, 0.6, 0.3, 0.5, 0.2, 0.1, 0.0])
    levels = [S, S, S, N, P, N, N, "cannot_check"]
    high = np.array([False, False, False, True, False, True, False, True])
    rows = {r["point"]: r for r in operating_points(gold, score, levels, high, LevelThresholds(0.55, 0.4, 0.15),
                                                     shares=(0.25, 0.5))}
    lv = rows["levels"]
    assert (lv["flagged"], lv["precision"], lv["recall"], lv["supported_flagged"]) == (4, 0.75, 1.0, 0.25)
    assert lv["unsure_share"] == 0 and lv["high_severity_share"] == 0.25
    assert rows["supported cut"]["flagged"] == 4 and rows["supported cut"]["unsure_share"] == 0
    ns = rows["not supported cut"]
    assert ns["precision"] == pytest.approx(2 / 3) and ns["recall"] == pytest.approx(2 / 3)
    assert ns["unsure_share"] == 1 / 8 and ns["high_severity_share"] == 2 / 8
    rep = rows["report cut"]
    assert (rep["flagged"], rep["precision"], rep["unsure_share"], rep["high_severity_share"]) == (1, 1.0, 3 / 8, 0)
    quarter = rows["25% supported flagged"]
    assert quarter["cut"] == 0.3 and quarter["supported_flagged"] == 0.25 and quarter["unsure_share"] == 1 / 8
    half = rows["50% supported flagged"]  # its cut (0.6) is above the supported one: the band above counts
    assert half["cut"] == 0.6 and half["supported_flagged"] == 0.5 and half["unsure_share"] == 1 / 8
    assert half["precision"] == pytest.approx(3 / 5) and half["recall"] == 1.0
    assert rows["sure flag cut"]["cut"] == 0.55  # no flag cut given: the supported cut, none unsure
    sure = {r["point"]: r for r in operating_points(gold, score, levels, high,
                                                     LevelThresholds(0.55, 0.4, 0.15, flag=0.35))}["sure flag cut"]
    assert (sure["cut"], sure["flagged"], sure["unsure_share"]) == (0.35, 3, 1 / 8)
    assert sure["precision"] == pytest.approx(2 / 3) and sure["supported_flagged"] == 0.25


def test_verdict_severities_fall_back_to_the_claim():
    verdicts = [Verdict("NOT ENOUGH INFO", 0.2, level=VerdictLevel.NOT_SUPPORTED),
                Verdict("NOT ENOUGH INFO", 0.4, level=VerdictLevel.PARTIALLY_SUPPORTED, unsupported=("mild",))]
    claims = ["It opened in 1990.", "The weather was mild."]
    assert verdict_severities(claims, verdicts).tolist() == [True, False]
    assert verdict_severities(claims, verdicts, [False, True]).tolist() == [True, True]


def test_eval_verify_citations_file_in_one_command(tmp_path, capsys):
    """`side eval verify citations FILE`: the shipped verifier, no judge, the operating points in the report."""
    from side.cli import main

    source = "Alsea is a Mexican restaurant operator. It was founded in 1990 in Mexico City by the Torrado family."
    rows = [{"claim": "Alsea was founded in 1990.", "source_text": source, "label": "supported", "title": "Alsea"},
            {"claim": "Alsea was founded in 1850 in Paris.", "source_text": source, "label": "not supported"},
            {"claim": "Alsea was founded in 1990 by Carlos Slim.", "source_text": source,
             "label": "partially supported"}]
    path = tmp_path / "held_out.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main(["eval", "verify", "citations", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    points = {r["point"]: r for r in report["side"]["operating_points"]}
    assert {"levels", "supported cut", "not supported cut", "report cut", "5% supported flagged",
            "30% supported flagged"} <= set(points)
    assert all(0.0 <= r["high_severity_share"] <= 1.0 and 0.0 <= r["unsure_share"] <= 1.0 for r in points.values())
    assert points["5% supported flagged"]["supported_flagged"] == 1.0  # one supported citation: the cut flags it
    assert main(["eval", "verify", "citations", str(path), "--claims", str(tmp_path / "other.jsonl")]) == 2
    assert "once" in capsys.readouterr().err

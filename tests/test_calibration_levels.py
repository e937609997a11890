"""The three-level train construction, the cuts chosen on it, and the level metrics of `side eval verify`."""

from __future__ import annotations

import json

import numpy as np
import pytest

from side.cli import main
from side.data import SciFactClaim
from side.evaluation.verify import (
    cannot_check_reasons,
    citation_integrity_level,
    cut_levels,
    level_metrics,
    level_report,
    majority_levels,
    report_metrics,
)
from side.training.calibration import (
    LevelItem,
    Signals,
    choose_cuts,
    choose_levels,
    choose_report_threshold,
    choose_sure_flag,
    level_items,
    supported_part,
)
from side.verify.crossencoder import VerdictLabel
from side.verify.levels import LevelThresholds, VerdictLevel
from side.verify.verifier import FEATURES, Combiner, Query, Verdict

from conftest import need_data

S, P, N, C = "supported", "partially_supported", "not_supported", "cannot_check"


def test_supported_part_drops_unsupported_words_and_keeps_the_claims_spacing():
    claim = "The audience consists of Australian ex-pats."
    tokens = ["The", "audience", "consists", "of", "Australian", "ex", "-", "pats", "."]
    assert supported_part(claim, tokens, [False] * 4 + [True] + [False] * 4) == "The audience consists of ex-pats."
    claim = "The grid has space in between columns, called gutters."
    tokens = claim.replace(",", " ,").replace(".", " .").split()
    assert supported_part(claim, tokens, [False] * 7 + [False, True, True, False]) == \
        "The grid has space in between columns."
    assert supported_part("In 2001, he won.", ["In", "2001", ",", "he", "won", "."],
                          [True, True, False, False, False, False]) == "he won."


def _record(n: int, tokens: list[str], unsupported: list[bool], gold: list[list[int]], page: list[str]) -> dict:
    return {"claim": " ".join(tokens[:-1]) + tokens[-1], "claim_tokens": tokens, "non_supported_spans": unsupported,
            "label": "partially_supported", "supporting_sentences": gold, "evidence": page,
            "meta": {"id": f"train{n}-1", "claim_title": "T", "claim_section": "S.", "claim_context": ""}}


def test_level_items_build_three_levels_from_partially_supported_train_subclaims(tmp_path):
    page = ["(meta data) TITLE: Page", *(f"sentence {i}" for i in range(1, 8))]
    records = [
        _record(1, ["Ann", "won", "gold", "in", "Oslo", "."], [False, False, False, True, True, False], [[3]], page),
        _record(2, ["Bob", "lost", "."], [False, True, False], [[2]], [f"other {i}" for i in range(5)]),
        *(_record(n, ["Cy", "ran", "far", "."], [False, False, True, False], [[0]], [f"page {n}", "far"])
          for n in range(3, 30)),
    ]
    (tmp_path / "wice").mkdir()
    (tmp_path / "wice" / "non_supported_tokens_train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    items = level_items(tmp_path)
    kinds = [(i.kind, i.level, i.group) for i in items]
    assert ("page", VerdictLevel.PARTIALLY_SUPPORTED, "train1") in kinds
    supported = [i for i in items if i.level is VerdictLevel.SUPPORTED]
    assert [i.query.claim for i in supported] == ["Ann won gold."]  # "Bob." is too short to keep
    full = next(i for i in items if i.kind == "page" and i.group == "train1")
    assert full.sentences[0] == "TITLE: Page"  # the meta prefix goes, as in `side eval verify`
    stripped = next(i for i in items if i.kind == "stripped_page" and i.group == "train1")
    assert stripped.level is VerdictLevel.NOT_SUPPORTED
    assert not {"sentence 2", "sentence 3", "sentence 4"} & set(stripped.sentences)
    assert "sentence 5" in stripped.sentences
    pages = [tuple(r["evidence"]) for r in records]
    pages[0] = full.sentences
    other = [i for i in items if i.kind == "other_page"]  # every third claim, when an earlier page differs
    assert len(other) >= 5
    for item in other:
        n = int(item.group.removeprefix("train")) - 1
        assert n % 3 == 0 and item.level is VerdictLevel.NOT_SUPPORTED
        assert item.sentences != pages[n] and item.sentences in pages[:n]


def test_level_metrics_on_hand_made_labels():
    gold = [S, S, P, P, P, N]
    predicted = [S, P, P, P, C, N]
    m = level_metrics(gold, predicted)
    assert m["confusion"][S] == {S: 1, P: 1, N: 0, C: 0}
    assert m["confusion"][P] == {S: 0, P: 2, N: 0, C: 1}
    # supported P 1 R 1/2 -> F1 2/3; partially P 2/3 R 2/3 -> 2/3; not supported 1.
    assert m["per_level"][S]["f1"] == pytest.approx(2 / 3)
    assert m["per_level"][P]["f1"] == pytest.approx(2 / 3)
    assert m["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert m["accuracy"] == pytest.approx(4 / 6)
    with pytest.raises(ValueError):
        level_metrics([S], ["refuted"])


def test_majority_baseline_predicts_the_most_common_level():
    gold = [P, P, S, N, P]
    assert majority_levels(gold) == [P] * 5
    m = level_metrics(gold, majority_levels(gold))
    assert m["macro_f1"] == pytest.approx((2 * 0.6 / 1.6) / 3)  # F1 of P (P 0.6, R 1), 0 for the others


def test_cut_levels_and_level_report_use_the_stored_baseline_cuts():
    assert cut_levels(np.array([5.0, 2.0, 1.0]), 3.0, 1.5) == [S, P, N]
    gold = [S, P, N]
    report = level_report(gold, [S, P, N], {"baseline_bm25_max": np.array([5.0, 2.0, 1.0]),
                                            "baseline_minilm_max_cosine": np.array([0.1, 0.2, 0.3])},
                          {"baseline_bm25_max": {"supported": 3.0, "not_supported": 1.5}})
    assert set(report) == {"verifier", "majority", "baseline_bm25_max"}  # no cuts stored for the cosine one
    assert report["verifier"]["macro_f1"] == 1.0 and report["baseline_bm25_max"]["macro_f1"] == 1.0


def test_report_metrics_count_only_not_supported_verdicts_below_the_report_cut():
    cuts = LevelThresholds(supported=0.7, not_supported=0.4, report=0.2)
    scores = [0.1, 0.15, 0.3, 0.05, 0.9]
    verdicts = [Verdict(VerdictLabel.NOT_ENOUGH_INFO, s, level=cuts.level(s)) for s in scores]
    verdicts[3] = Verdict(VerdictLabel.NOT_ENOUGH_INFO, 0.0, reason="empty source")  # cannot check: never reported
    report = report_metrics([N, P, N, N, S], verdicts, cuts)
    assert report["reported"] == 2  # 0.1 and 0.15; 0.3 is not supported but above the report cut
    assert report["precision"] == 0.5 and report["recall"] == pytest.approx(1 / 3)


def test_cannot_check_reasons_are_counted():
    levels = [C, S, C, C]
    assert cannot_check_reasons(levels, ["empty source", "", "source is not in English", "empty source"]) == \
        {"empty source": 2, "source is not in English": 1}


def test_citation_integrity_levels_follow_the_annotation_scheme():
    claim = SciFactClaim(id=1, claim="x", evidence={"7": [{"sentences": [0], "label": "REFUTE"}],
                                                    "8": [{"sentences": [1], "label": "SUPPORT"}]},
                         cited_doc_ids=["7", "8", "9"])
    assert citation_integrity_level(claim, "8") == S
    assert citation_integrity_level(claim, "7") == P  # NOT_ACCURATE: the article speaks to it, not as written
    assert citation_integrity_level(claim, "9") == N  # IRRELEVANT


def test_choose_cuts_separates_ordered_levels():
    score = np.array([0.9, 0.8, 0.85, 0.5, 0.55, 0.4, 0.1, 0.2])
    levels = [S, S, S, P, P, P, N, N]
    supported, not_supported, f1 = choose_cuts(score, levels)
    assert f1 == 1.0
    assert 0.55 < supported <= 0.8 and 0.2 < not_supported <= 0.4


def test_report_threshold_is_the_highest_cut_keeping_the_precision():
    score = np.array([0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.10, 0.5, 0.9])
    levels = [N] * 9 + [P, N, S]
    report = choose_report_threshold(score, levels, precision=0.9)
    # 9 of the lowest 9 are not supported, 9 of 10 at 0.10, 10 of 11 at 0.5: the cut goes above 0.5.
    assert 0.5 < report["report_threshold"] < 0.9
    assert report["precision"] == pytest.approx(10 / 11) and report["recall"] == 1.0
    assert choose_report_threshold(np.array([0.1, 0.2]), [S, P])["report_threshold"] == 0.0


def test_choose_levels_sets_ordered_cuts_on_the_combiner():
    rng = np.random.default_rng(0)
    level_of = [VerdictLevel.SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED, VerdictLevel.NOT_SUPPORTED]
    truth = rng.integers(0, 3, 300)
    features = rng.normal(0, 0.3, (300, len(FEATURES)))
    features[:, 0] += 2.0 - truth  # ce_support falls with the level
    combiner = Combiner([0.0] * len(FEATURES), [1.0] * len(FEATURES), [2.0] + [0.0] * (len(FEATURES) - 1), 0.0)
    items = [LevelItem(Query("claim"), ("page",), level_of[t], str(n), "page") for n, t in enumerate(truth)]
    reasons = [""] * 299 + ["empty source"]
    chosen = choose_levels(combiner, Signals(features, features[:, 0] * 3, features[:, 0], reasons), items)
    cuts = combiner.levels
    assert cuts.report <= cuts.not_supported < cuts.supported
    assert chosen["train_macro_f1"] > 0.8
    assert sum(chosen["train_items"].values()) == 299  # the item that could not be checked is left out
    assert set(combiner.info["baseline_levels"]) == {"baseline_bm25_max", "baseline_minilm_max_cosine"}
    bm25 = combiner.info["baseline_levels"]["baseline_bm25_max"]
    assert bm25["supported"] > bm25["not_supported"]
    # the sure flag cut: in order, and at most 10% of the supported items below it
    assert cuts.report <= cuts.flag <= cuts.supported and cuts.flag == combiner.sure_flag_threshold
    scores = np.array([combiner.score(dict(zip(FEATURES, features[n], strict=True))) for n in range(299)])
    supported = scores[truth[:299] == 0]
    assert (supported < cuts.flag).mean() <= 0.1 == chosen["sure_flag"]["target"]
    assert chosen["sure_flag_threshold"] == cuts.flag


def test_sure_flag_is_the_highest_cut_flagging_at_most_a_tenth_of_supported():
    supported = [0.10, 0.35, 0.40, 0.50, 0.60, 0.61, 0.70, 0.80, 0.85, 0.90, 0.95, 0.99]  # 12: one may fall below
    score = np.array(supported + [0.05, 0.2, 0.3, 0.38, 0.45])
    levels = [S] * 12 + [N, N, P, P, P]
    chosen = choose_sure_flag(score, levels)
    cut = chosen["sure_flag_threshold"]
    assert cut == 0.35  # the 2nd lowest supported score: only 0.10 falls below it
    assert chosen["supported_flagged"] == pytest.approx(1 / 12)
    # below 0.35: 0.10 (supported), 0.05, 0.2, 0.3 (needs review)
    assert chosen["flagged"] == 4 and chosen["precision"] == pytest.approx(3 / 4)
    # one more supported item below would break the budget: any higher cut takes 0.35 in
    assert (np.array(supported) < cut + 1e-6).mean() > 0.1
    assert choose_sure_flag(np.array([0.2]), [N])["sure_flag_threshold"] == 0.0


def test_eval_verify_wice_reports_levels(capsys):
    need_data("wice/claim_dev.jsonl")
    assert main(["eval", "verify", "wice", "--limit", "20", "--json"]) == 0
    wice = json.loads(capsys.readouterr().out)["wice"]
    for method in ("verifier", "majority", "baseline_bm25_max", "baseline_minilm_max_cosine"):
        levels = wice["levels"][method]
        assert set(levels["confusion"]) == {S, P, N}
        assert sum(sum(row.values()) for row in levels["confusion"].values()) == 20
        assert 0.0 <= levels["macro_f1"] <= 1.0
    assert isinstance(wice["cannot_check"], dict)
    report = wice["report"]
    said_not_supported = sum(row[N] for row in wice["levels"]["verifier"]["confusion"].values())
    assert 0 <= report["reported"] <= said_not_supported  # only not-supported verdicts are reported
    assert set(report) == {"report_threshold", "reported", "precision", "recall"}


def test_cached_signals_are_keyed_by_how_pairs_become_tokens():
    """Signals cached for the same weights but another token budget, bi-encoder or evidence shortlist
    are not read back: a verifier.json with another max_length, SIDE_ENCODER_MODEL or
    SIDE_VERIFIER_SHORTLIST scores other pairs."""
    from side.retrieval.encoder import Encoder, encoder_path
    from side.training.calibration import _cache_key
    from side.verify.verifier import Verifier

    verifier = Verifier.load(device="cpu")
    items = [(Query("Paris is the capital of France.", "Paris"), ["Paris is France's capital."])]
    key = _cache_key(verifier, items)
    assert _cache_key(verifier, items) == key
    verifier.cross_encoder.pairs.max_length += 128
    longer = _cache_key(verifier, items)
    assert longer != key
    verifier.shortlist = 0  # embed every sentence
    everything = _cache_key(verifier, items)
    assert everything not in (key, longer)
    # The bi-encoder named by its directory rather than "minilm": another encoder as far as an index
    # or a cache can tell, so its signals are not shared.
    other = Verifier(verifier.cross_encoder, encoder=Encoder(path=encoder_path("minilm"), device="cpu"), shortlist=0)
    assert other.encoder.name != verifier.encoder.name
    assert _cache_key(other, items) not in (key, longer, everything)

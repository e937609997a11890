"""Sub-claims: the rule-based split of a claim, the level read off the parts, and the switch that turns it on."""

from __future__ import annotations

import json
import re

import pytest

from side.config import load_config
from side.data import load_wice
from side.training.calibration import joined_level_items
from side.verify.decompose import MAX_SUB_CLAIMS, split_claim, subject_of
from side.verify.levels import LevelThresholds, VerdictLevel, part_levels
from side.verify.verifier import Query, verdict_level

from conftest import need_data

CUTS = LevelThresholds(supported=0.6, not_supported=0.3, report=0.1)
_WORD = re.compile(r"\w+")


def test_coordinated_verb_phrase_carries_the_subject():
    assert split_claim("Daroshafaei left BBC Persian in 2013 and returned to Iran.") == [
        "Daroshafaei left BBC Persian in 2013.", "Daroshafaei returned to Iran."]


def test_clauses_relative_clauses_and_appositives_become_sentences():
    assert split_claim("A print issue appears every January, and electronic issues appear in March.") == [
        "A print issue appears every January.", "Electronic issues appear in March."]
    assert split_claim("Kim Soo-hyun, who starred in the film, won the award in 2014.") == [
        "Kim Soo-hyun won the award in 2014.", "Kim Soo-hyun starred in the film."]
    assert split_claim("Esteban Ocon, the European champion, was joined in Macau by Martin Cao.") == [
        "Esteban Ocon was joined in Macau by Martin Cao.", "Esteban Ocon is the European champion."]
    assert split_claim("The league was founded in 1990; it has twelve clubs.") == [
        "The league was founded in 1990.", "The league has twelve clubs."]


def test_lists_and_simple_claims_stay_whole():
    for claim in ("Red, green, and blue are the colours of the flag.", "He has three older brothers.",
                  "By mixing affection, fascination, and distortion in these pieces, Wong exemplified a view.",
                  "", "   "):
        assert split_claim(claim) == [claim]


def test_subject_skips_a_leading_phrase():
    assert subject_of("In 2013, Burns joined the program and left in 2015.") == "Burns"
    assert subject_of("Running quickly towards the old stone bridge over the river was hard") is None


def test_real_wice_claims_split_into_bounded_standalone_sentences():
    """On WiCE dev claims: some split, none into more than the cap, every part is a sentence made
    of the claim's own words (plus the "is" an appositive needs)."""
    claims = [c.claim for c in load_wice(need_data("wice/claim_dev.jsonl"))]
    split = 0
    for claim in claims:
        parts = split_claim(claim)
        assert 1 <= len(parts) <= MAX_SUB_CLAIMS
        if len(parts) == 1:
            assert parts == [claim]
            continue
        split += 1
        words = {w.lower() for w in _WORD.findall(claim)} | {"is"}
        for part in parts:
            assert part[:1].isupper() or not part[:1].isalpha(), part
            assert part[-1] in ".!?\"”'", part
            assert {w.lower() for w in _WORD.findall(part)} <= words, (claim, part)
            assert len(_WORD.findall(part)) >= 3
    assert 0 < split < len(claims)


def test_joined_train_claims_split_back_into_their_sub_claims(data_dir):
    """The compound train items are joined with ", and": the split finds most joins again."""
    items = joined_level_items(data_dir)
    kinds = {i.kind for i in items}
    assert kinds == {"joined_page", "joined_mixed", "joined_supported_part", "joined_stripped_page"}
    assert {i.level for i in items} == {VerdictLevel.SUPPORTED, VerdictLevel.PARTIALLY_SUPPORTED,
                                        VerdictLevel.NOT_SUPPORTED}
    split = [len(split_claim(i.query.claim)) > 1 for i in items]
    assert sum(split) > len(items) / 2


@pytest.mark.parametrize(("whole", "parts", "level"), [
    (0.9, [0.8, 0.7], VerdictLevel.SUPPORTED),
    (0.9, [0.8, 0.2], VerdictLevel.PARTIALLY_SUPPORTED),  # one clause unbacked: partially, whatever the whole says
    (0.1, [0.2, 0.25], VerdictLevel.NOT_SUPPORTED),
    (0.2, [0.1, 0.7], VerdictLevel.PARTIALLY_SUPPORTED),  # one clause backed: not "not supported"
    (0.5, [0.9, 0.9], VerdictLevel.PARTIALLY_SUPPORTED),  # the whole claim guards a split that lost its sense
])
def test_level_from_parts(whole, parts, level):
    assert part_levels(whole, parts, CUTS) is level


def test_level_without_parts_is_the_whole_claims_and_no_guard_reads_parts_only():
    for score in (0.05, 0.3, 0.45, 0.6, 0.95):
        assert part_levels(score, [], CUTS) is CUTS.level(score)
    assert part_levels(0.5, [0.9, 0.9], CUTS, guard=False) is VerdictLevel.SUPPORTED
    # a re-levelled verdict applies the same rule from the parts kept in its signals
    assert verdict_level(0.9, {"part_min": 0.2, "part_max": 0.8}, CUTS) is VerdictLevel.PARTIALLY_SUPPORTED
    assert verdict_level(0.9, {}, CUTS) is VerdictLevel.SUPPORTED


def test_config_switch_reads_environment(monkeypatch):
    assert isinstance(load_config().verifier.split_claims, bool)
    monkeypatch.setenv("SIDE_VERIFIER_SPLIT_CLAIMS", "1")
    assert load_config().verifier.split_claims is True
    monkeypatch.setenv("SIDE_VERIFIER_SPLIT_CLAIMS", "0")
    assert load_config().verifier.split_claims is False


@pytest.fixture(scope="module")
def verifier():
    from side.verify.verifier import Verifier

    return Verifier.load(device="cpu")


def test_verifier_with_split_claims_reads_the_level_off_the_parts(verifier):
    """A claim of two clauses whose source backs only the first: the parts are verified, the
    score stays the whole claim's, and the verdict's signals keep the parts for re-levelling."""
    page = ["Ann Smith joined the Royal Ballet in 1990.", "She danced Giselle in London that year.",
            "The weather in London was mild.", "Tickets sold out within a week."]
    query = Query("Ann Smith joined the Royal Ballet in 1990 and retired to a farm in Peru in 1995.")
    verifier.split_claims = False
    whole = verifier.run([(query, page)])[0]
    verifier.split_claims = True
    try:
        split = verifier.run([(query, page)])[0]
    finally:
        verifier.split_claims = False
    assert whole.parts == [] and len(split.parts) == 2
    assert split.decided.score == whole.decided.score
    signals = split.decided.signals
    assert signals["parts"] == 2 and signals["part_min"] <= signals["part_max"]
    assert split.decided.level is verdict_level(split.decided.score, signals, verifier.levels)
    assert split.decided.level is not VerdictLevel.SUPPORTED


def test_eval_verify_split_claims_prints_both_rules_from_one_run(capsys):
    """`side eval verify wice --split-claims`: the sub-claim rule as the verifier, today's
    whole-claim rule beside it from the same verdicts, and what the split cost."""
    from side.cli import main

    need_data("wice/claim_dev.jsonl")
    assert main(["eval", "verify", "wice", "--limit", "4", "--split-claims", "--json"]) == 0
    wice = json.loads(capsys.readouterr().out)["wice"]
    assert {"verifier", "verifier_whole_claim", "majority"} <= set(wice["levels"])
    cost = wice["cost"]
    assert cost["claims"] == 4 and cost["parts"] >= 2 * cost["claims_split"]
    assert cost["cross_encoder_pairs_per_claim"] >= cost["cross_encoder_pairs_per_claim_whole"] > 0

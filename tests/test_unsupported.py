"""Naming the words of a claim its source does not back: the tagger, its file, the verifier's use
of it, its evaluation on WiCE dev and the commands that build and measure it."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from side.cli import main
from side.errors import ModelLoadError
from side.verify.crossencoder import DEFAULT_MODEL_DIR
from side.verify.levels import VerdictLevel
from side.verify.unsupported import (
    FEATURES,
    UNSUPPORTED_FILE,
    PageWords,
    UnsupportedTagger,
    align_tokens,
    normal_forms,
    phrases,
    tokenize_claim,
)
from side.verify.verifier import Query, Verifier

from conftest import need_data

PAGE = [
    "Sikandar Raza is a Zimbabwean cricketer.",
    "Raza made his debut for Pakistan against Zimbabwe in a one-day match.",
    "He later moved to Zimbabwe and played for its national team.",
    "Tickets for the next series can be bought online.",
]


@pytest.fixture(scope="module")
def tagger() -> UnsupportedTagger:
    loaded = UnsupportedTagger.load(DEFAULT_MODEL_DIR / UNSUPPORTED_FILE)
    assert loaded is not None, "the shipped model directory must hold unsupported.json"
    return loaded


def test_claim_tokens_follow_wice_splitting():
    claim = "Smith's U.S. tour drew 36,000 fans in 2018–19, a record."
    assert [t.text for t in tokenize_claim(claim)] == [
        "Smith", "'s", "U.S.", "tour", "drew", "36,000", "fans", "in", "2018–19", ",", "a", "record", "."]
    assert all(claim[t.start : t.end] == t.text for t in tokenize_claim(claim))


def test_numbers_and_plurals_normalise_alike_on_claim_and_page():
    assert normal_forms("36,000 fans") == normal_forms("36000 fan")
    assert normal_forms("three matches") == normal_forms("3 match")


def test_word_absent_from_page_is_named_and_present_word_is_not(tagger):
    claim = "Raza made his debut for Pakistan against Zimbabwe on 24 October 1996."
    named = tagger.tag(claim, PAGE[1:2], PAGE)
    assert named, "the date is nowhere in the page"
    joined = " ".join(named)
    assert "1996" in joined and "October" in joined
    for backed in ("Raza", "debut", "Pakistan", "Zimbabwe"):
        assert backed not in joined


def test_fully_backed_claim_names_nothing(tagger):
    claim = "Raza made his debut for Pakistan against Zimbabwe."
    assert tagger.tag(claim, PAGE[1:2], PAGE) == ()


def test_adjacent_unsupported_tokens_merge_into_one_phrase():
    claim = "Raza made his debut on 24 October 1996 in Lahore."
    tokens = tokenize_claim(claim)
    flags = [t.text in {"on", "24", "October", "1996", "in", "Lahore"} for t in tokens]
    # "on" leads and is trimmed; "in" joins the date to the place, so it is one phrase
    assert phrases(claim, tokens, flags) == ("24 October 1996 in Lahore",)
    flags = [t.text in {"24", "October", "Lahore"} for t in tokens]
    assert phrases(claim, tokens, flags) == ("24 October", "Lahore")


def test_function_word_and_punctuation_only_spans_are_dropped():
    claim = "He played for the team , and won ."
    tokens = tokenize_claim(claim)
    flags = [t.text in {"for", "the", ",", "and", "."} for t in tokens]
    assert phrases(claim, tokens, flags) == ()


def test_given_tokens_align_to_claim_offsets():
    claim = "The audience consists of Australian ex-pats."
    tokens = align_tokens(claim, ["The", "audience", "consists", "of", "Australian", "ex", "-", "pats", "."])
    assert [claim[t.start : t.end] for t in tokens] == [t.text for t in tokens]


def test_page_vocabulary_is_bounded_in_characters():
    words = PageWords.of(["alpha beta"] * 10 + ["omega"], max_chars=50)
    assert "alpha" in words.counts and "omega" not in words.counts


def test_tagger_round_trips_through_json(tmp_path, tagger):
    path = tmp_path / UNSUPPORTED_FILE
    tagger.save(path)
    again = UnsupportedTagger.load(path)
    assert again == tagger
    assert json.loads(path.read_text())["features"] == list(FEATURES)
    claim = "Raza made his debut for Pakistan against Zimbabwe on 24 October 1996."
    assert again.tag(claim, PAGE[1:2], PAGE) == tagger.tag(claim, PAGE[1:2], PAGE)


def test_missing_file_is_none_and_other_features_are_an_error(tmp_path, tagger):
    assert UnsupportedTagger.load(tmp_path / "absent.json") is None
    path = tmp_path / UNSUPPORTED_FILE
    tagger.save(path)
    data = json.loads(path.read_text())
    data["features"] = data["features"][:-1]
    path.write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="other features"):
        UnsupportedTagger.load(path)


@pytest.fixture(scope="module")
def verifier() -> Verifier:
    return Verifier.load(device="cpu")


def test_verifier_loads_the_shipped_tagger(verifier):
    assert verifier.tagger is not None


RAZA = Query(claim="Raza made his debut for Pakistan against Zimbabwe on 24 October 1996 in Lahore.",
             title="Sikandar Raza", section="Career")


def with_cuts(verifier: Verifier, supported: float, not_supported: float) -> Verifier:
    """The shipped verifier (same models and tagger) with other level cuts."""
    combiner = replace(verifier.combiner, flag_threshold=supported, not_supported_threshold=not_supported)
    return Verifier(verifier.cross_encoder, verifier.encoder, combiner, tagger=verifier.tagger)


def test_verifier_names_unsupported_words_of_a_partially_supported_verdict(verifier):
    # a band of partial support wide enough that this half-backed claim falls in it
    banded = with_cuts(verifier, supported=0.99, not_supported=0.01)
    verdict = banded.verify(RAZA, PAGE)
    assert verdict.level is VerdictLevel.PARTIALLY_SUPPORTED
    joined = " ".join(verdict.unsupported)
    assert "1996" in joined and "Lahore" in joined
    assert "Pakistan" not in joined and "debut" not in joined


def test_not_supported_verdict_names_the_claim_words_the_page_lacks(verifier):
    strict = with_cuts(verifier, supported=0.99, not_supported=0.99)
    verdict = strict.verify(RAZA, PAGE)
    assert verdict.level is VerdictLevel.NOT_SUPPORTED
    assert "Lahore" in " ".join(verdict.unsupported)


def test_supported_verdict_names_nothing(verifier):
    lenient = with_cuts(verifier, supported=0.01, not_supported=0.01)
    verdict = lenient.verify(RAZA, PAGE)
    assert verdict.level is VerdictLevel.SUPPORTED
    assert verdict.unsupported == ()


def raza_claim():
    from side.extract.claims import Citation, Claim

    citation = Citation(id="raza", kind="template", url="https://example.org/raza")
    return Claim("Sikandar Raza", ("Career",), RAZA.claim, RAZA.claim, citation)


def pipeline_verdict(verifier: Verifier, flag_threshold: float):
    """The cited source's verdict as a Pipeline with its own flag threshold decides it."""
    from side.pipeline import Pipeline, SourceStatus

    pipeline = Pipeline(verifier, None, lambda url: (SourceStatus.CACHE, PAGE, "Raza", ""),
                        flag_threshold=flag_threshold, own_sources=0)
    return pipeline.verify_claims([raza_claim()])[0].verdict


def test_verdict_relevelled_by_a_stricter_pipeline_keeps_its_words(verifier):
    lenient = with_cuts(verifier, supported=0.01, not_supported=0.01)
    assert lenient.verify(RAZA, PAGE).level is VerdictLevel.SUPPORTED
    verdict = pipeline_verdict(lenient, flag_threshold=0.99)
    assert verdict.level is VerdictLevel.PARTIALLY_SUPPORTED
    assert "Lahore" in " ".join(verdict.unsupported)
    # a lenient pipeline sharing the verifier names nothing, before or after the strict one
    assert pipeline_verdict(lenient, flag_threshold=0.01).unsupported == ()
    assert lenient.verify(RAZA, PAGE).unsupported == ()


def test_words_are_not_looked_for_where_they_are_never_shown(verifier):
    strict = with_cuts(verifier, supported=0.99, not_supported=0.99)
    shown, hidden = strict.verify_many([(RAZA, PAGE), (RAZA, PAGE)], shown=[True, False])
    assert shown.level is hidden.level is VerdictLevel.NOT_SUPPORTED
    assert "Lahore" in " ".join(shown.unsupported)
    assert hidden.unsupported == ()


def test_page_of_4000_sentences_is_read(tagger):
    page = [f"Sentence {i} mentions the harbour of town {i} and its mayor." for i in range(4000)]
    claim = "The harbour of town 12 opened in 1851 under mayor Okafor."
    named = " ".join(tagger.tag(claim, page[12:13], page))
    assert "Okafor" in named and "harbour" not in named


def test_eval_on_wice_dev_beats_both_baselines(verifier):
    from side.evaluation.unsupported import evaluate_unsupported

    path = need_data("wice/non_supported_tokens_dev.jsonl")
    result = evaluate_unsupported(verifier.tagger, verifier.embeddings, path, limit=12)
    assert result["claims"] == 12
    assert 0 < result["unsupported_tokens"] < result["tokens"]
    for name in ("tagger", "baseline_absent_from_page", "baseline_all_content"):
        assert set(result[name]) == {"precision", "recall", "f1", "predicted"}
        assert 0.0 <= result[name]["f1"] <= 1.0
    # every content token includes every content token absent from the page
    assert result["baseline_all_content"]["recall"] >= result["baseline_absent_from_page"]["recall"]
    assert result["baseline_all_content"]["predicted"] >= result["baseline_absent_from_page"]["predicted"]
    assert result["tagger"]["f1"] > result["baseline_absent_from_page"]["f1"]
    assert result["tagger"]["f1"] > result["baseline_all_content"]["f1"]
    assert np.isfinite(result["tagger"]["precision"])


def test_train_command_with_missing_file_exits_2_with_one_line(tmp_path, capsys):
    code = main(["train", "unsupported", "--data", str(tmp_path / "absent.jsonl"), "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "absent.jsonl" in err


def test_eval_command_with_missing_file_exits_2_with_one_line(tmp_path, capsys):
    code = main(["eval", "verify", "unsupported", "--claims", str(tmp_path / "absent.jsonl")])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert len(err.splitlines()) == 1 and "absent.jsonl" in err

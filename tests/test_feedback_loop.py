"""Decisions flow back: the feedback export, side calibrate from it, and training pairs from it."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from service.feedback import main as feedback_main
from service.store import CheckRequest, DismissReason, FeedbackAction, Store
from side.cli import main as side_main
from side.extract.claims import Citation, Claim
from side.training.feedback import (
    FeedbackRecord,
    ReviewedSentence,
    ReviewedSuggestion,
    citation_supported,
    read_feedback,
    write_feedback,
)
from side.training.recalibrate import recalibrate
from side.training.trainset import feedback_examples
from side.verify.crossencoder import DEFAULT_MODEL_DIR
from side.verify.levels import LevelThresholds
from side.verify.verifier import COMBINER_FILE, Combiner

from webapp import finish, outcome

SHIPPED = Combiner.load(DEFAULT_MODEL_DIR / COMBINER_FILE)


def claim(n: int) -> Claim:
    text = f"Alsea opened {n + 10} stores in 2019."
    return Claim(article_title="Alsea (company)", section=("History",), text=text,
                 left_context=f"Alsea is an operator. {text}",
                 citation=Citation(id=f"r{n}", kind="cite", url=f"https://cited.example/{n}", title="Report"))


def config_file(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "side.toml"
    path.write_text(f'var_dir = "{tmp_path / "var"}"\n[service]\ndatabase_url = "{url}"\n', encoding="utf-8")
    return path


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "Traceback" not in err
    return err


def test_export_from_a_real_store_round_trips(store_url, tmp_path, capsys):
    store = Store.open(store_url)
    claims = [claim(n) for n in range(4)]
    check, _ = store.add_check(CheckRequest(wiki="enwiki", title="Alsea (company)", claims=claims, revision=7))
    finish(store, check.id, [
        outcome(claims[0], 0.21, True, suggestion=("https://better.example/a", "Annual report", "Alsea opened 10."),
                evidence=("Alsea sells coffee.", "Alsea is in Mexico.")),
        outcome(claims[1], 0.55, True, evidence=("Alsea opened 11 stores in 2019.",)),
        outcome(claims[2], 0.30, True, suggestion=("https://better.example/c", "Blog", "Unrelated."),
                evidence=("Nothing here.",)),
        outcome(claims[3], 0.90, False, evidence=("Alsea opened 13 stores in 2019.",)),
    ])
    results = store.results(check.id)
    store.add_feedback(results[0].id, FeedbackAction.ACCEPT, suggestion_url="https://better.example/a",
                       reviewer="Reviewer-Ann")
    store.add_feedback(results[1].id, FeedbackAction.DISMISS, DismissReason.SOURCE_IS_FINE, reviewer="Bo")
    store.add_feedback(results[2].id, FeedbackAction.ACCEPT, reviewer="Cy")
    store.add_feedback(results[2].id, FeedbackAction.DISMISS, DismissReason.SUGGESTION_WRONG, reviewer="Cy",
                       comment="the blog says nothing of it")
    store.close()

    out = tmp_path / "feedback.jsonl"
    assert feedback_main(["--config", str(config_file(tmp_path, store_url)), "export", "--out", str(out)]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "side-feedback", "version": 1, "records": 3}
    assert all(json.loads(line)["version"] == 1 for line in lines[1:])
    assert "Reviewer-Ann" not in out.read_text(encoding="utf-8")  # reviewers' names stay in the store
    records = read_feedback(out)
    accepted, fine, wrong = records  # oldest decision first; the unreviewed result is not exported
    assert (accepted.claim, accepted.cited_url, accepted.score) == (claims[0].text, "https://cited.example/0", 0.21)
    assert accepted.context == claims[0].left_context and accepted.section == "History"
    assert [e.text for e in accepted.evidence] == ["Alsea sells coffee.", "Alsea is in Mexico."]
    assert accepted.suggestion == ReviewedSuggestion("https://better.example/a", "Annual report", 0.91,
                                                     "Alsea opened 10.")
    assert (accepted.action, accepted.level, accepted.flagged, accepted.revision) == ("accept", "not_supported",
                                                                                      True, 7)
    assert accepted.checked_at.endswith("Z") and accepted.reviewed_at.endswith("Z")
    assert (fine.action, fine.reason, fine.suggestion) == ("dismiss", "source-is-fine", None)
    assert (wrong.reason, wrong.comment) == ("suggestion-wrong", "the blog says nothing of it")  # the latest decision
    again = tmp_path / "again.jsonl"
    write_feedback(records, again)
    assert again.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")

    # side-feedback calibrate exports the same file and calibrates from it as side calibrate does
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(DEFAULT_MODEL_DIR / COMBINER_FILE, model / COMBINER_FILE)
    capsys.readouterr()
    exported = tmp_path / "store-export.jsonl"
    assert feedback_main(["--config", str(config_file(tmp_path, store_url)), "calibrate", "--export", str(exported),
                          "--model", str(model)]) == 0
    from_store = json.loads(capsys.readouterr().out)
    assert exported.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    assert side_main(["calibrate", "--from", str(out), "--model", str(model)]) == 0
    from_file = json.loads(capsys.readouterr().out)
    assert {k: v for k, v in from_store.items() if k != "feedback"} == \
        {k: v for k, v in from_file.items() if k != "feedback"}
    assert from_file["labelled"] == 3 and from_file["changed"] is False  # 3 reviews < the minimum

    # the same two through the side command line, which finds them as plugins (entry points)
    config = str(config_file(tmp_path, store_url))
    through_side = tmp_path / "side-export.jsonl"
    assert side_main(["--config", config, "feedback", "export", "--out", str(through_side)]) == 0
    assert through_side.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    capsys.readouterr()
    from_side_store = tmp_path / "side-store-export.jsonl"
    assert side_main(["--config", config, "calibrate", "--from-store", "--export", str(from_side_store),
                      "--model", str(model)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert from_side_store.read_text(encoding="utf-8") == out.read_text(encoding="utf-8")
    assert {k: v for k, v in report.items() if k != "feedback"} == \
        {k: v for k, v in from_file.items() if k != "feedback"}


def record(score: float | None, action: str, reason: str = "", suggestion: str = "It does.") -> FeedbackRecord:
    return FeedbackRecord(
        claim="Alsea opened 10 stores.", context="Alsea is an operator. Alsea opened 10 stores.",
        article_title="Alsea", section="History", cited_url="https://cited.example", score=score,
        level="not_supported", flagged=True, evidence=(ReviewedSentence("Alsea sells coffee.", 0.2, 3),),
        action=FeedbackAction(action), reason=reason,
        suggestion=ReviewedSuggestion("https://better.example", "Better", 0.9, suggestion) if suggestion else None)


def constructed(false_flags: int = 40, right_flags: int = 40, missed: int = 0) -> list[FeedbackRecord]:
    """Right flags far below the shipped cut, false flags just under it, missed ones just above."""
    out = [record(0.05 + 0.25 * i / right_flags, "accept" if i % 2 else "dismiss",
                  "" if i % 2 else DismissReason.SUGGESTION_WRONG) for i in range(right_flags)]
    out += [record(0.5 + 0.15 * i / false_flags, "dismiss", DismissReason.SOURCE_IS_FINE) for i in range(false_flags)]
    out += [record(0.7 + 0.1 * i / max(1, missed), "accept") for i in range(missed)]
    out += [record(0.1, "dismiss", DismissReason.NOT_RELEVANT), record(None, "accept")]  # left out
    return out


def test_the_decision_mapping():
    assert citation_supported(record(0.1, "accept")) is False
    assert citation_supported(record(0.1, "dismiss", DismissReason.SUGGESTION_WRONG)) is False
    assert citation_supported(record(0.6, "dismiss", DismissReason.SOURCE_IS_FINE)) is True
    assert citation_supported(record(0.1, "dismiss", DismissReason.NOT_RELEVANT)) is None
    assert citation_supported(record(0.1, "dismiss", DismissReason.OTHER)) is None


def test_below_the_minimum_nothing_changes(tmp_path, capsys):
    current = SHIPPED.levels
    few = constructed(false_flags=20, right_flags=20)
    outcome_ = recalibrate(few, current, min_reviews=50)
    assert outcome_.labelled == 40 and not outcome_.changed and outcome_.after == current
    path = tmp_path / "few.jsonl"
    write_feedback(few, path)
    out = tmp_path / "copy"
    assert side_main(["calibrate", "--from", str(path), "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"] is None and not out.exists()
    assert report["before"] == report["after"]
    assert report["left_out"] == {"no label": 1, "no score": 1}


def test_false_flags_lower_the_cut_and_raise_precision(tmp_path, capsys):
    path = tmp_path / "feedback.jsonl"
    write_feedback(constructed(), path)
    out = tmp_path / "model-copy"
    assert side_main(["calibrate", "--from", str(path), "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["changed"] and report["written"] == str(out / COMBINER_FILE)
    after = report["after"]
    assert 0.3 <= after["flag_threshold"] <= 0.5 < SHIPPED.flag_threshold
    assert report["flag_after"]["precision"] > report["flag_before"]["precision"]
    assert report["flag_after"]["recall"] == report["flag_before"]["recall"] == 1.0
    assert after["report_threshold"] <= after["not_supported_threshold"] <= after["flag_threshold"]
    written = Combiner.load(out / COMBINER_FILE)
    assert written.levels == LevelThresholds(after["flag_threshold"], after["not_supported_threshold"],
                                             after["report_threshold"])
    assert written.coef == SHIPPED.coef and written.info["feedback_calibration"]["labelled"] == 80
    assert (out / "verifier.safetensors").is_file()  # the copy loads as a model
    assert Combiner.load(DEFAULT_MODEL_DIR / COMBINER_FILE).levels == SHIPPED.levels  # the shipped one untouched


def test_missed_citations_raise_the_cut():
    current = LevelThresholds(0.6, 0.4, 0.2)
    outcome_ = recalibrate(constructed(false_flags=0, right_flags=60, missed=20), current, min_reviews=50)
    assert outcome_.after.supported > 0.795 and outcome_.flag_after.recall == 1.0 > outcome_.flag_before.recall


def test_the_model_directory_is_replaced_only_with_write(tmp_path, capsys):
    model = tmp_path / "model"
    model.mkdir()
    shutil.copy(DEFAULT_MODEL_DIR / COMBINER_FILE, model / COMBINER_FILE)
    path = tmp_path / "feedback.jsonl"
    write_feedback(constructed(), path)
    assert side_main(["calibrate", "--from", str(path), "--model", str(model), "--out", str(model)]) == 2
    assert "--write" in one_line_error(capsys)
    assert Combiner.load(model / COMBINER_FILE).levels == SHIPPED.levels
    assert side_main(["calibrate", "--from", str(path), "--model", str(model), "--write"]) == 0
    assert Combiner.load(model / COMBINER_FILE).flag_threshold < SHIPPED.flag_threshold


@pytest.mark.parametrize("content, says", [
    (None, "not found"),
    ("", "not a feedback export"),
    ('{"format": "side-feedback", "version": 2}\n', "version 2"),
    ('{"format": "side-feedback", "version": 1}\n{"version": 1, "claim": "x"}\n', ":2: feedback record lacks"),
    ('{"format": "side-feedback", "version": 1}\nnot json\n', ":2: not JSON"),
    ('{"format": "side-feedback", "version": 1}\n{"version": 1, "claim": "x", "action": "dismiss", "reason": "meh"}\n',
     ":2: malformed"),
])
def test_bad_exports_exit_2_with_one_line(tmp_path, capsys, content, says):
    path = tmp_path / "feedback.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert side_main(["calibrate", "--from", str(path)]) == 2
    assert says in one_line_error(capsys)
    assert side_main(["train", "verifier", "--feedback", str(path), "--out", str(tmp_path / "m")]) == 2
    assert says in one_line_error(capsys)


def test_train_verifier_takes_a_feedback_file(tmp_path, capsys):
    with pytest.raises(SystemExit) as help_:
        side_main(["train", "verifier", "--help"])
    assert help_.value.code == 0 and "--feedback FILE" in capsys.readouterr().out
    path = tmp_path / "feedback.jsonl"
    write_feedback([record(0.1, "accept")], path)
    assert side_main(["train", "verifier", "--feedback", str(path), "--levels-only"]) == 2
    assert "--levels-only" in one_line_error(capsys)


def test_calibrate_needs_one_source_and_from_store_a_reachable_store(tmp_path, capsys):
    with pytest.raises(SystemExit) as usage:
        side_main(["calibrate"])
    assert usage.value.code == 2
    capsys.readouterr()
    missing = tmp_path / "absent" / "side.sqlite3"
    bad = tmp_path / "side.toml"
    bad.write_text(f'var_dir = "{tmp_path / "var"}"\n[service]\ndatabase_url = "nosuchdriver://{missing}"\n',
                   encoding="utf-8")
    assert side_main(["--config", str(bad), "calibrate", "--from-store"]) == 2
    assert one_line_error(capsys).startswith("side: error:")


def test_side_feedback_bad_input_is_one_line(tmp_path, capsys):
    url = f"sqlite:///{tmp_path / 'side.sqlite3'}"
    assert feedback_main(["--config", str(config_file(tmp_path, url)), "export", "--out",
                          str(tmp_path / "missing" / "f.jsonl")]) == 2
    assert "directory not found" in one_line_error(capsys)


def test_reviews_become_training_pairs():
    accepted = record(0.1, "accept")
    fine = record(0.6, "dismiss", DismissReason.SOURCE_IS_FINE)
    wrong = record(0.2, "dismiss", DismissReason.SUGGESTION_WRONG, suggestion="A blog about cats.")
    examples = feedback_examples([accepted, fine, wrong, record(0.1, "dismiss", DismissReason.NOT_RELEVANT),
                                  replace(accepted, suggestion=None)])
    got = [(ex.passage, ex.label, ex.group) for ex in examples]
    base = examples[0].group
    assert got == [("It does.", "S", base), ("Alsea sells coffee.", "X", base),  # accepted: better source, bad one
                   ("Alsea sells coffee.", "S", base + 1),  # the cited source is fine
                   ("A blog about cats.", "X", base + 2),  # the suggestion is wrong
                   ("Alsea sells coffee.", "X", base + 4)]  # accepted without a suggestion: only the negative
    assert examples[0].title == "Alsea" and examples[0].context == "History [SEP] " + accepted.context
    assert {ex.source for ex in examples} == {"feedback"}

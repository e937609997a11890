"""``side eval window``: gold-set coverage counted right, and bad input."""

from __future__ import annotations

from side.cli import main
from side.evaluation.window import WindowItem, evaluate_windows, head_cut, is_covered
from side.verify.verifier import Query


def test_gold_coverage_on_a_hand_made_example():
    assert is_covered(frozenset({1, 2, 5}), [frozenset({1, 5}), frozenset({7})])
    assert not is_covered(frozenset({1, 2}), [frozenset({1, 5}), frozenset({7})])
    sentences = ["a" * 39, "b" * 39, "c" * 39, "d" * 39]  # 40 characters a line with the newline
    inside, tokens = head_cut(sentences, chars=100)
    assert inside == {0, 1} and tokens == 25
    assert head_cut(sentences[:1], chars=100) == (frozenset({0}), 10)
    page = ["Intro words here.", "Nothing relevant.", "Zed won the cup in 1990.", "More filler text.",
            "The cup was held in Paris.", "End."]
    items = [WindowItem(Query("Zed won the cup in Paris in 1990."), tuple(page),
                        (frozenset({2, 4}),)),
             WindowItem(Query("Zed won the cup in Paris in 1990."), tuple(page), (frozenset({0, 5}),))]
    report = evaluate_windows(items, budgets=(20,), neighbours=0, context_weight=0.0)
    window = report["window"][0]
    assert window["coverage"] == 0.5  # the first claim's set is found, the second's is not
    assert window["tokens_per_claim"] <= 20
    assert report["head_cut"]["coverage"] == 1.0  # the page is shorter than the head cut


def test_eval_window_bad_input_is_one_line(tmp_path, capsys):
    assert main(["eval", "window", "--claims", str(tmp_path / "missing.jsonl")]) == 2
    assert main(["eval", "window", "--claims", str(tmp_path / "missing.jsonl"), "--budget", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and all("Traceback" not in line for line in err)

"""Shortcut probes and the filter that removes what they find (side.training.shortcut)."""

from __future__ import annotations

import random

import pytest

from side.errors import InputError
from side.training.finetune import require_no_shortcut
from side.training.shortcut import MAX_PROBE_AUROC, filter_shortcuts, probe_examples, query_text
from side.training.trainset import Example

WORDS = ("river city band album film team species election bridge novel painter league tower season "
         "company ship island museum festival railway school church mountain").split()


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def _contrastive(n: int, seed: int = 1) -> list[Example]:
    """Each claim twice, titled alike, once against a premise that repeats it and once against one
    that does not: only reading the premise against the claim tells the label."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        claim = _sentence(rng, 8)
        title = f"Article {i}" if i % 2 else ""
        out.append(Example(title, claim, claim + " " + _sentence(rng, 6), "S", "twins", i))
        out.append(Example(title, claim, _sentence(rng, 14), "X", "twins", i))
    return out


def _titled_negatives(n: int, seed: int = 2) -> list[Example]:
    """The shipped model's flaw in small: every titled pair is a negative."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        claim = _sentence(rng, 8)
        titled = i % 2 == 0
        out.append(Example(f"Article {i}" if titled else "", claim, _sentence(rng, 10),
                           "X" if titled else "S", "titled", -1))
    return out


def test_query_text_marks_a_title():
    assert query_text(Example("Paris", "It is big.", "p", "S", "s")).startswith("__titled__ Paris")
    assert query_text(Example("", "It is big.", "p", "S", "s")).startswith("__untitled__")


def test_the_title_shortcut_is_found_and_refused():
    report = probe_examples(_titled_negatives(300))
    assert report.query_only > 0.95
    assert not report.passed
    with pytest.raises(InputError, match="query-only probe AUROC"):
        require_no_shortcut(report)


def test_pairs_told_only_by_their_premise_pass():
    report = probe_examples(_contrastive(300))
    assert report.query_only <= MAX_PROBE_AUROC
    assert report.premise_length <= MAX_PROBE_AUROC
    assert report.passed
    require_no_shortcut(report)
    assert report.by_source["twins"][2] == 600


def test_premise_length_shortcut_is_found():
    rng = random.Random(3)
    examples = []
    for i in range(300):
        claim = _sentence(rng, 8)
        examples.append(Example("", claim, _sentence(rng, 40), "S", "long", i))
        examples.append(Example("", claim, _sentence(rng, 5), "X", "long", i))
    report = probe_examples(examples)
    assert report.premise_length > 0.95
    assert report.query_only <= MAX_PROBE_AUROC
    assert not report.passed


def test_filter_drops_what_the_probe_tells_and_keeps_order():
    examples = _contrastive(200) + _titled_negatives(200)
    before = probe_examples(examples)
    assert not before.passed
    kept = filter_shortcuts(examples)
    after = probe_examples(kept)
    assert after.query_only < before.query_only
    assert after.query_only <= MAX_PROBE_AUROC
    assert len(kept) < len(examples)
    positions = {id(ex): i for i, ex in enumerate(examples)}
    assert [positions[id(ex)] for ex in kept] == sorted(positions[id(ex)] for ex in kept)

"""The claims held out of the cross-encoder's training for the combiner (side.training.holdout):
the training pairs and the combiner's fit data must never share a WiCE page or a SciFact claim."""

from __future__ import annotations

import json
import random

import pytest

from side.training.calibration import _scifact_items, _wice_items, level_items
from side.training.chunked import scifact_chunks, wice_chunks
from side.training.holdout import held_out, scifact_key, wice_key

from conftest import need_data


def test_no_share_holds_nothing_out():
    assert not any(held_out(wice_key(str(n)), 0.0) for n in range(500))


def test_share_is_about_the_fraction_asked_and_stable():
    keys = [wice_key(str(n)) for n in range(4000)]
    half = [held_out(k, 0.5) for k in keys]
    assert 0.45 < sum(half) / len(keys) < 0.55
    assert half == [held_out(k, 0.5) for k in keys]
    # a larger share holds out every claim a smaller one does
    assert all(held_out(k, 0.7) for k, h in zip(keys, half, strict=True) if h)


def test_sub_claims_of_one_claim_fall_on_one_side():
    assert wice_key("1234-0") == wice_key("1234-7") == wice_key("1234")
    assert wice_key("1234-0") != wice_key("1235-0")
    assert scifact_key(12) != scifact_key(13)


@pytest.fixture(scope="module")
def data():
    return need_data("wice/non_supported_tokens_train.jsonl").parents[1]


def test_wice_claims_held_out_are_never_trained_on_and_are_all_the_combiner_sees(data):
    from side.data import load_wice
    from side.training.chunked import GROUP_BASE
    from side.training.trainset import WICE_TRAIN

    claims = load_wice(data / WICE_TRAIN)
    kept = {n for n, c in enumerate(claims) if held_out(wice_key(c.id), 0.5)}
    assert 0 < len(kept) < len(claims)
    trained = {ex.group - GROUP_BASE for ex in wice_chunks(data, holdout=0.5)}
    assert trained and not trained & kept
    # the claims not held out keep every pair they had
    assert trained == {ex.group - GROUP_BASE for ex in wice_chunks(data)} - kept
    items, labels, kinds = _wice_items(data, random.Random(13), 0.5)
    assert items and {q.claim for q, _ in items} <= {claims[n].claim for n in kept}
    assert set(labels) == {0, 1}
    assert len(kinds) == len(items) and set(kinds) == {"page", "stripped_page", "other_page"}
    assert [label for label, kind in zip(labels, kinds, strict=True) if kind == "page"] == [1] * kinds.count("page")
    levels = level_items(data, holdout=0.5)
    assert {i.group for i in levels} == {claims[n].id.split("-")[0] for n in kept}


def test_scifact_claims_held_out_are_never_trained_on(data):
    need_data("scifact/claims_train.jsonl")
    trained = {ex.context for ex in scifact_chunks(data, holdout=0.5)}
    items, _ = _scifact_items(data, 0.5)
    fitted = {q.claim for q, _ in items}
    assert trained and fitted and not trained & fitted
    everything = {q.claim for q, _ in _scifact_items(data)[0]}
    assert fitted < everything
    levels = level_items(data, scifact=True, holdout=0.5)
    assert {i.query.claim for i in levels if i.kind == "scifact"} == fitted


def test_the_share_trained_with_is_written_for_the_combiner_refit(tmp_path):
    from side.training.finetune import TrainSettings, save_model
    from side.verify.crossencoder import build_model

    settings = TrainSettings(data_dir=tmp_path, out_dir=tmp_path / "m", work_dir=tmp_path / "w",
                             chunks=True, combiner_holdout=0.5)
    save_model(build_model(4), settings, {})
    meta = json.loads((tmp_path / "m" / "verifier.json").read_text())
    assert meta["combiner_holdout"] == 0.5 and meta["premise"] == "chunk"

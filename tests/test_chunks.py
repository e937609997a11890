"""Chunk premises and the PARTIAL output: cutting chunks, training pairs, loading and running a
four-output chunk model (side.verify.chunks, side.training.chunked, side.verify.crossencoder)."""

from __future__ import annotations

import json
import math
import shutil

import numpy as np
import pytest
import torch

from side.training.finetune import TrainSettings, batch_loss, save_model
from side.training.trainset import LABEL_IDS
from side.verify.chunks import chunk_around, chunk_spans, chunk_text
from side.verify.crossencoder import (
    DEFAULT_MODEL_DIR,
    NEI,
    PARTIAL,
    WEIGHTS_FILE,
    CrossEncoder,
    build_model,
    load_trained_weights,
)
from side.verify.verifier import COMBINER_FILE, FEATURES, Combiner, Query, Verifier

from conftest import need_data


def _sentences(*lengths: int) -> list[str]:
    return [" ".join(f"w{i}x{j}" for j in range(n)) for i, n in enumerate(lengths)]


def test_chunk_grows_around_its_core_within_the_word_budget():
    sentences = _sentences(10, 10, 10, 10, 10, 10)
    start, end = chunk_around(sentences, [2], words=30)
    assert (start, end) == (1, 4) or (start, end) == (2, 5)
    assert start <= 2 < end
    assert sum(len(s.split()) for s in sentences[start:end]) <= 30


def test_chunk_keeps_a_long_core_whole_and_adds_nothing():
    sentences = _sentences(5, 40, 5)
    assert chunk_around(sentences, [1], words=30) == (1, 2)


def test_chunk_spans_skip_centres_already_inside_a_chunk():
    sentences = _sentences(*([10] * 12))
    spans = chunk_spans(sentences, [3, 4, 10, 0], words=30, most=3)
    assert len(spans) == 3
    assert any(a <= 3 < b for a, b in spans) and any(a <= 10 < b for a, b in spans)
    for (a1, b1), (a2, b2) in zip(spans, spans[1:], strict=False):
        assert b1 <= a2 or b2 <= a1  # no two chunks overlap
    assert chunk_spans(sentences, [3, 4], words=30, most=1) == spans[:1]
    assert chunk_text(["A b.", "  ", "C d."], (0, 3)) == "A b. C d."


def test_partial_label_is_its_own_class_or_not_supported_in_a_three_way_model():
    four = torch.tensor([[0.3, -0.2, 0.1, 1.2]])
    loss4 = batch_loss(four, torch.tensor([LABEL_IDS["P"]]), torch.tensor([-1]), 1.0, 0.0)
    assert math.isclose(float(loss4), float(torch.nn.functional.cross_entropy(four, torch.tensor([3]))), rel_tol=1e-6)
    three = four[:, :3]
    loss3 = batch_loss(three, torch.tensor([LABEL_IDS["P"]]), torch.tensor([-1]), 1.0, 0.0)
    probs = torch.softmax(three, -1)[0]
    assert math.isclose(float(loss3), -math.log(float(probs[1] + probs[2])), rel_tol=1e-5)
    # "not supported" in a four-way model is any class but SUPPORTS
    loss_x = batch_loss(four, torch.tensor([LABEL_IDS["X"]]), torch.tensor([-1]), 1.0, 0.0)
    p4 = torch.softmax(four, -1)[0]
    assert math.isclose(float(loss_x), -math.log(float(1 - p4[0])), rel_tol=1e-5)


@pytest.fixture(scope="module")
def chunk_model(tmp_path_factory):
    """The shipped verifier widened to four outputs and marked as a chunk model (no training:
    its PARTIAL row starts as NOT ENOUGH INFO's), with the shipped combiner and tagger beside it."""
    out = tmp_path_factory.mktemp("chunk-model")
    model = build_model(4)
    load_trained_weights(model, DEFAULT_MODEL_DIR / WEIGHTS_FILE, widen=True)
    save_model(model, TrainSettings(data_dir=out, out_dir=out, chunks=True, chunk_words=40), {"steps": 0})
    for name in (COMBINER_FILE, "unsupported.json"):
        shutil.copy(DEFAULT_MODEL_DIR / name, out / name)
    return out


def test_widened_model_starts_partial_as_a_copy_of_not_enough_info(chunk_model):
    meta = json.loads((chunk_model / "verifier.json").read_text())
    assert meta["labels"][-1] == PARTIAL and meta["premise"] == "chunk" and meta["chunk_words"] == 40
    assert meta["query_context"] is False
    cross = CrossEncoder(chunk_model, device="cpu", precision="fp32")
    weight = cross.model.classifier.weight
    assert torch.allclose(weight[3], weight[NEI])
    pairs = [Query("The bridge opened in 1932.", "Bridge").pair("The bridge was opened to traffic in 1932."),
             Query("The bridge opened in 1932.", "Bridge").pair("Tickets are sold at the gate.")]
    probs, partial = cross.predict_partial(pairs)
    assert probs.shape == (2, 3)
    assert np.allclose(probs.sum(1), 1.0, atol=1e-5)
    # PARTIAL is counted as NOT ENOUGH INFO in the three columns, and equals it here (same row)
    assert np.all(partial <= probs[:, NEI] + 1e-6)
    assert np.allclose(partial * 2, probs[:, NEI], atol=1e-4)


def test_verifier_judges_chunks_with_a_chunk_model_and_the_window_with_others(chunk_model):
    sentences = [f"Sentence {i} says the bridge crossed the river number {i}." for i in range(30)]
    sentences[12] = "The Harbour Bridge opened to traffic in March 1932."
    query = Query("The bridge opened in 1932.", "Sydney Harbour Bridge", context="Construction began in 1923.")
    chunked = Verifier.load(chunk_model, device="cpu", precision="fp32")
    plain = Verifier.load(device="cpu", precision="fp32")
    item = chunked.run([(query, sentences)])[0]
    base = plain.run([(query, sentences)])[0]
    windows = chunked.windows(sentences, item.candidates)
    assert len(item.pairs) == len(item.candidates) + len(windows)
    assert 1 < len(windows) <= 3
    assert any("March 1932" in w for w in windows)
    assert all(len(w.split()) <= 40 for w in windows)
    assert len(base.pairs) == len(base.candidates) + 1
    # a chunk model reads the claim with its title but without the sentences before it
    assert all("Construction" not in pair.context and pair.title for pair in item.pairs)
    assert all("Construction" in pair.context for pair in base.pairs)
    assert item.decided.signals["ce_partial"] > 0.0
    assert base.decided.signals["ce_partial"] == 0.0
    assert item.decided.evidence[0].sentence_index == base.decided.evidence[0].sentence_index


def test_a_combiner_fitted_on_fewer_signals_still_loads_and_scores(tmp_path):
    path = tmp_path / COMBINER_FILE
    Combiner([0.5, 0.5], [0.1, 0.1], [1.0, 2.0], -0.5, features=("ce_support", "coverage")).save(path)
    loaded = Combiner.load(path)
    assert loaded is not None and loaded.features == ("ce_support", "coverage")
    signals = {name: 0.5 for name in FEATURES}
    score = loaded.score(signals)
    assert math.isclose(score, 1 / (1 + math.exp(0.5)), rel_tol=1e-9)
    signals["ce_partial"] = 0.99  # a signal it was not fitted on does not move it
    assert loaded.score(signals) == score
    signals["coverage"] = 0.6
    assert loaded.score(signals) > score
    path.write_text(json.dumps({"features": ["no_such_signal"], "mean": [0.0], "scale": [1.0], "coef": [1.0],
                                "intercept": 0.0}))
    assert Combiner.load(path) is None


def test_chunk_training_pairs_carry_the_title_in_every_label():
    from side.training.chunked import wice_chunks

    data = need_data("wice/non_supported_tokens_train.jsonl").parents[1]
    pairs = wice_chunks(data, words=120)
    labels = {ex.label for ex in pairs}
    assert labels == {"P", "S", "N"}
    assert all(ex.title for ex in pairs)
    by_group: dict[int, dict[str, set[str]]] = {}
    for ex in pairs:
        by_group.setdefault(ex.group, {}).setdefault(ex.label, set()).add(ex.passage)
    twins = [g for g in by_group.values() if "S" in g and "P" in g]
    assert twins and all(g["S"] & g["P"] for g in twins)  # a supported part shares its partial twin's chunk
    assert all(len(ex.passage.split()) <= 2 * 120 + 60 for ex in pairs if ex.label == "N")


def test_hugging_face_export_of_a_chunk_model_keeps_its_premise_and_partial_output(chunk_model, tmp_path):
    from side.verify.hf_export import export_hf

    export_hf(tmp_path / "hf", chunk_model)
    exported = CrossEncoder(tmp_path / "hf", device="cpu", precision="fp32")
    own = CrossEncoder(chunk_model, device="cpu", precision="fp32")
    assert exported.format == "hf" and exported.premise == "chunk" and exported.chunk_words == 40
    assert exported.query_context is False
    pairs = [Query("The bridge opened in 1932.", "Bridge").pair("The bridge was opened to traffic in 1932.")]
    (p1, q1), (p2, q2) = exported.predict_partial(pairs), own.predict_partial(pairs)
    assert np.allclose(p1, p2, atol=1e-4) and np.allclose(q1, q2, atol=1e-4) and q1[0] > 0


@pytest.mark.parametrize("value", ["vitaminc", "vitaminc=0", "vitaminc=-3", "vitaminc=many", "nosuch=10", "joined=all"])
def test_a_bad_chunk_cap_is_refused_before_any_work(value, tmp_path, monkeypatch, capsys):
    from side.cli import main as side_main

    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    with pytest.raises(SystemExit) as exit_:
        side_main(["train", "verifier", "--chunks", "--chunk-cap", value, "--out", str(tmp_path / "out")])
    assert exit_.value.code == 2
    assert f"argument --chunk-cap: {value!r}" in capsys.readouterr().err.splitlines()[-1]
    assert not (tmp_path / "out").exists() and not (tmp_path / "var").exists()


def test_chunk_caps_reach_the_recipe_and_keep_twins_together(tmp_path, monkeypatch, capsys):
    """``--chunk-cap SOURCE=N`` reaches the recipe (``all``: every pair), and a cap draws whole
    groups, so a claim's twins are never split by it."""
    from side.cli import main as side_main
    from side.training import chunked, finetune

    data = need_data("wice/non_supported_tokens_train.jsonl").parents[1]
    seen: list[dict[str, int | None]] = []

    def recorded(data_dir, seed=13, words=chunked.CHUNK_WORDS, caps=None, holdout=0.0):
        seen.append(dict(caps or {}))
        raise SystemExit(0)  # the caps are what this test is about, not the pairs

    monkeypatch.setenv("SIDE_DATA_DIR", str(data))
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path / "var"))
    monkeypatch.setattr(finetune, "chunked_examples", recorded)
    with pytest.raises(SystemExit):
        side_main(["train", "verifier", "--chunks", "--probe-only", "--chunk-cap", "vitaminc=all",
                   "--chunk-cap", "fm2=40", "--out", str(tmp_path / "out")])
    assert seen == [{"vitaminc": None, "fm2": 40}]
    assert side_main(["train", "verifier", "--chunks", "--chunk-cap", "fm2=40", "--chunk-cap", "fm2=all",
                      "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "side: error: --chunk-cap fm2 given more than once; give each source one cap"]
    assert len(seen) == 1 and not (tmp_path / "out").exists()

    every = chunked.fm2_examples(data)
    drawn = chunked._sample(every, 40, chunked.random.Random(13))
    size = {g: sum(1 for ex in every if ex.group == g) for g in {ex.group for ex in drawn}}
    assert 40 <= len(drawn) < 40 + max(size.values())
    assert len(drawn) == sum(size.values())  # each drawn group whole

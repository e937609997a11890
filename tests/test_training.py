"""Training loss and batching (the full training run is `side train verifier`)."""

from __future__ import annotations

import math

import pytest
import torch

from side.errors import InputError
from side.training.finetune import batch_loss, make_batches
from side.training.trainset import LABEL_IDS, Example, units
from side.verify.crossencoder import Pair, PairEncoder, load_tokenizer


def test_binary_not_supported_label_is_trained_as_refutes_or_nei():
    logits = torch.tensor([[2.0, 0.5, -1.0]])
    loss = batch_loss(logits, torch.tensor([LABEL_IDS["X"]]), torch.tensor([-1]), 1.0, 0.0)
    probs = torch.softmax(logits, -1)[0]
    assert math.isclose(float(loss), -math.log(float(probs[1] + probs[2])), rel_tol=1e-5)


def test_three_way_label_is_plain_cross_entropy():
    logits = torch.tensor([[0.1, 1.5, -0.3]])
    loss = batch_loss(logits, torch.tensor([1]), torch.tensor([-1]), 1.0, 0.0)
    expected = torch.nn.functional.cross_entropy(logits, torch.tensor([1]))
    assert math.isclose(float(loss), float(expected), rel_tol=1e-6)


def test_ranking_term_only_when_evidence_does_not_beat_its_negatives():
    labels = torch.tensor([0, 2])
    groups = torch.tensor([7, 7])
    ranked_right = torch.tensor([[5.0, -5.0, -5.0], [-5.0, -5.0, 5.0]])
    ranked_wrong = torch.tensor([[-5.0, -5.0, 5.0], [5.0, -5.0, -5.0]])
    no_rank = batch_loss(ranked_wrong, labels, torch.tensor([-1, -1]), 1.0, 0.5)
    with_rank = batch_loss(ranked_wrong, labels, groups, 1.0, 0.5)
    assert float(with_rank) > float(no_rank)
    assert math.isclose(float(batch_loss(ranked_right, labels, groups, 1.0, 0.5)),
                        float(batch_loss(ranked_right, labels, torch.tensor([-1, -1]), 1.0, 0.5)), rel_tol=1e-6)


def test_batches_keep_groups_together_and_cover_every_example():
    examples = [Example("", f"claim {i}", f"passage {i} " * (i % 7 + 1), "S", "t", group=i // 3) for i in range(60)]
    examples += [Example("", f"loose {i}", "text", "N", "t") for i in range(25)]
    encoder = PairEncoder(load_tokenizer(), 64)
    lengths = [len(ids) for ids, _ in encoder.encode([Pair(ex.title, ex.context, ex.passage) for ex in examples])]
    batches = make_batches(examples, 8, seed=1, lengths=lengths)
    seen = sorted(i for b in batches for i in b)
    assert seen == list(range(len(examples)))
    where = {i: n for n, b in enumerate(batches) for i in b}
    for unit in units(examples):
        assert len({where[examples.index(ex)] for ex in unit}) == 1
    assert all(len(b) <= 8 for b in batches)


@pytest.mark.parametrize("autocast, expected", [("bf16", "FULL_RECIPE"), (None, "FP32_CPU_RECIPE")])
def test_default_recipe_follows_native_bf16(monkeypatch, autocast, expected):
    """The shipped recipe where bf16 runs natively, the cut one on an fp32 CPU."""
    from side.training import finetune as training

    monkeypatch.setattr(training, "autocast_dtype", lambda device: autocast)
    assert training.default_recipe("cpu") == getattr(training, expected)


def test_library_defaults_are_the_shipped_recipe():
    from dataclasses import fields

    from side.training.finetune import FULL_RECIPE, TrainSettings

    defaults = {f.name: f.default for f in fields(TrainSettings)}
    assert {k: defaults[k] for k in FULL_RECIPE} == FULL_RECIPE


def test_a_second_stage_starts_from_the_trained_weights():
    from safetensors.torch import load_file

    from side.training.finetune import _check_init
    from side.verify.crossencoder import DEFAULT_MODEL_DIR, WEIGHTS_FILE, build_model, load_trained_weights

    _check_init(DEFAULT_MODEL_DIR, "minilm")
    model = build_model()
    shipped = load_file(str(DEFAULT_MODEL_DIR / WEIGHTS_FILE))
    assert not torch.equal(model.classifier.weight, shipped["classifier.weight"].float())  # a new head
    load_trained_weights(model, DEFAULT_MODEL_DIR / WEIGHTS_FILE)
    assert torch.equal(model.classifier.weight, shipped["classifier.weight"].float())
    layer = "bert.encoder.layer.5.output.dense.weight"
    assert torch.equal(model.state_dict()[layer], shipped[layer].float())


def test_init_from_a_directory_without_a_verifier_or_of_another_backbone_is_refused(tmp_path, capsys):
    import shutil

    from side.cli import main
    from side.training.finetune import _check_init
    from side.verify.crossencoder import DEFAULT_MODEL_DIR

    assert main(["train", "verifier", "--init", str(tmp_path), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--init" in err and "verifier.safetensors" in err
    copy = shutil.copytree(DEFAULT_MODEL_DIR, tmp_path / "copy")
    with pytest.raises(InputError, match="--base minilm"):
        _check_init(copy, "mpnet")


@pytest.mark.parametrize("option", [["--init", "side/models/verifier"], ["--joined", "10"], ["--supported-parts"]])
def test_options_of_the_fine_tuning_are_refused_where_it_is_skipped(tmp_path, capsys, option):
    from side.cli import main

    assert main(["train", "verifier", *option, "--combiner-only", "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and option[0] in err and "--combiner-only" in err
    assert not (tmp_path / "m").exists()

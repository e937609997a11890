"""The cross-encoder's input building, weight round trip and batched inference."""

from __future__ import annotations

import numpy as np
import pytest

from side.errors import ModelLoadError
from side.verify.crossencoder import (
    LABELS,
    WEIGHTS_FILE,
    CrossEncoder,
    Pair,
    PairEncoder,
    build_model,
    collate,
    load_tokenizer,
    trainable_state,
)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


def test_query_side_is_truncated_from_the_left(tokenizer):
    encoder = PairEncoder(tokenizer, max_length=32)
    context = " ".join(f"w{i}" for i in range(200)) + " nearestword"
    ids, types = encoder.encode([Pair("Title", context, "short passage")])[0]
    text = tokenizer.decode(ids)
    assert len(ids) <= 32
    assert "nearestword" in text.replace(" ", "")
    assert "w0 " not in text
    assert "short passage" in text
    assert types[0] == 0 and types[-1] == 1


def test_long_passage_is_cut_from_the_right_and_keeps_query(tokenizer):
    encoder = PairEncoder(tokenizer, max_length=40)
    passage = "alpha " + " ".join(["filler"] * 300) + " omega"
    ids, _ = encoder.encode([Pair("T", "the claim", passage)])[0]
    text = tokenizer.decode(ids)
    assert "alpha" in text and "omega" not in text
    assert "the claim" in text


def test_collate_pads_to_longest(tokenizer):
    encoder = PairEncoder(tokenizer, max_length=64)
    encoded = encoder.encode([Pair("", "a", "b"), Pair("", "a much longer claim here", "and a longer passage too")])
    batch = collate(encoded)
    width = max(len(ids) for ids, _ in encoded)
    assert batch["input_ids"].shape == (2, width)
    assert int(batch["attention_mask"][0].sum()) == len(encoded[0][0])


def test_weights_round_trip_without_embeddings(tmp_path):
    """What is shipped leaves out the frozen embeddings and still loads to the same outputs."""
    from safetensors.torch import save_file

    model = build_model()
    state = trainable_state(model)
    assert not any("word_embeddings" in k for k in state)
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp_path / WEIGHTS_FILE))
    (tmp_path / "verifier.json").write_text('{"max_length": 64}')
    cross = CrossEncoder(tmp_path, device="cpu")
    pairs = [Pair("Paris", "Paris is the capital of France.", "Paris is France's capital city."),
             Pair("", "x", "y " * 10)]
    probs = cross.predict(pairs)
    assert probs.shape == (2, len(LABELS))
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-5)
    # Order of results follows the input, whatever the length-sorted batching did.
    reversed_probs = cross.predict(pairs[::-1])
    np.testing.assert_allclose(reversed_probs[::-1], probs, atol=1e-5)


def test_missing_weights_is_a_typed_error(tmp_path):
    with pytest.raises(ModelLoadError, match="side train verifier"):
        CrossEncoder(tmp_path)

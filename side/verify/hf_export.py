"""Export the verifier's cross-encoder as a standard Hugging Face checkpoint.

Side ships its cross-encoder as ``verifier.safetensors`` without the frozen word embeddings, which
load from the offline all-MiniLM-L6-v2 package, so the file only Side can read stays small. Other
tools (``sentence_transformers.CrossEncoder``, ``transformers.AutoModelForSequenceClassification``,
the Hugging Face Hub) expect a self-contained directory instead: ``config.json`` naming the labels,
``model.safetensors`` with *every* weight, the tokenizer files and a ``README.md`` model card with
YAML metadata. :func:`export_hf` writes that directory from the model exactly as Side loads it
(fp32, on the CPU), so the exported model scores like Side's own path. Nothing is downloaded: the
tokenizer is the one of the same offline package.

The card of the shipped weights is their ``MODEL_CARD.md``, Hub front matter included, copied as
it is: the package and the Hub show one card. Weights without a card of their own (a model
trained with ``side train verifier --out DIR``) get one written from their ``verifier.json``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from side.errors import InputError
from side.verify.crossencoder import (
    BACKBONES,
    DEFAULT_MODEL_DIR,
    HF_CONFIG_FILE,
    LABELS,
    META_FILE,
    WEIGHTS_FILE,
    CrossEncoder,
    backbone_of,
)

__all__ = [
    "SIDE_CARD_FILE", "CARD_FILE", "BASE_MODEL", "LICENSE", "DATASETS", "TAGS",
    "LOAD_ONLY_TOKENIZER_KEYS", "ExportResult", "check_target", "export_hf", "card_metadata",
    "model_card",
]

log = logging.getLogger(__name__)

#: A model directory's own card (the shipped one has it): copied as the export's README.md.
SIDE_CARD_FILE = "MODEL_CARD.md"
CARD_FILE = "README.md"
#: The Hub id of the model Side's cross-encoder was initialised from.
BASE_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: The licence the weights ship under inside the Side package (pyproject.toml: MIT).
LICENSE = "mit"
#: Hub ids of the public training sources that have one (WiCE, Q2, BEGIN, Factcheck-GPT do not;
#: the card's body lists every source with its licence).
DATASETS = ("fever/fever", "stanfordnlp/snli", "nyu-mll/multi_nli", "tals/vitaminc", "allenai/scifact")
TAGS = ("sentence-transformers", "cross-encoder", "text-classification", "natural-language-inference",
        "fact-verification", "citation-verification", "wikipedia", "side")
#: Keys transformers records in tokenizer_config.json about how *this* machine loaded the files
#: (offline, from a local folder); they are not properties of the tokenizer and must not travel.
LOAD_ONLY_TOKENIZER_KEYS = ("is_local", "local_files_only")


@dataclass(frozen=True)
class ExportResult:
    """What :func:`export_hf` wrote."""

    directory: Path
    files: tuple[str, ...]
    parameters: int
    labels: tuple[str, ...]
    max_length: int


def check_target(directory: Path, force: bool = False, model_dir: Path | None = None) -> None:
    """Refuse a target that is a file, a non-empty folder (unless ``force``) or the model's own folder.

    Checked before the model loads, so a wrong path fails at once; ``force`` replaces the files of
    the same names and leaves any others in place (nothing of the user's is deleted).
    """
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory} is a file, not a directory; give a new or empty directory")
    if model_dir is not None and directory.is_dir() and directory.resolve() == model_dir.resolve():
        raise InputError(f"{directory} is the verifier's own directory; export to another one")
    if directory.is_dir() and any(directory.iterdir()) and not force:
        raise InputError(f"{directory} is not empty; give a new or empty directory, "
                         "or pass --force to overwrite the files the export writes")


def export_hf(directory: str | Path, model_dir: str | Path | None = None, force: bool = False) -> ExportResult:
    """Write the verifier at ``model_dir`` (default: the shipped one) as a Hugging Face checkpoint."""
    directory = Path(directory)
    source = Path(model_dir) if model_dir else DEFAULT_MODEL_DIR
    check_target(directory, force, source)
    if not (source / WEIGHTS_FILE).is_file() and (source / HF_CONFIG_FILE).is_file():
        raise InputError(f"{source} is already a Hugging Face checkpoint; copy the directory instead")
    # fp32 on the CPU whatever this machine's default: the exported weights are full precision.
    cross = CrossEncoder(source, device="cpu", precision="fp32")
    max_length = cross.pairs.max_length
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if cross.premise == "chunk":  # read back by CrossEncoder, so Side feeds the export chunks too
            cross.model.config.side_premise = cross.premise
            cross.model.config.side_chunk_words = cross.chunk_words
            cross.model.config.side_query_context = cross.query_context
        cross.model.save_pretrained(str(directory))
        written = list(cross.pairs.tokenizer.save_pretrained(str(directory)))
        _clean_tokenizer_config(directory / "tokenizer_config.json", max_length)
        (directory / CARD_FILE).write_text(model_card(cross.meta, source), encoding="utf-8")
        _match_modes(directory, ["config.json", "model.safetensors"])
    except OSError as exc:
        raise InputError(f"cannot write the export to {directory}: {exc.strerror or exc}") from exc
    files = sorted({"config.json", "model.safetensors", CARD_FILE, *(Path(p).name for p in written)})
    parameters = sum(p.numel() for p in cross.model.parameters())
    log.info("exported %s (%d parameters) to %s", source, parameters, directory)
    return ExportResult(directory, tuple(files), parameters, LABELS, max_length)


def _clean_tokenizer_config(path: Path, max_length: int) -> None:
    """Drop this machine's load options and set the model's token limit for every loader."""
    config = json.loads(path.read_text(encoding="utf-8"))
    for key in LOAD_ONLY_TOKENIZER_KEYS:
        config.pop(key, None)
    config["model_max_length"] = max_length
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def _match_modes(directory: Path, names: list[str]) -> None:
    """Give the weights the permissions of a file written normally (transformers may write 0600)."""
    mode = (directory / "tokenizer_config.json").stat().st_mode & 0o777
    for name in names:
        (directory / name).chmod(mode)


def card_metadata(base_model: str = BASE_MODEL) -> Any:
    """The model card's YAML front matter, as the Hub's own ModelCardData writes it."""
    from huggingface_hub import ModelCardData

    return ModelCardData(
        license=LICENSE, library_name="sentence-transformers", pipeline_tag="text-classification",
        base_model=base_model, datasets=list(DATASETS), language=["en"], tags=list(TAGS),
    )


def model_card(meta: dict, model_dir: Path) -> str:
    """README.md for the export: the model's own MODEL_CARD.md as it is, else one written from ``meta``."""
    side_card = model_dir / SIDE_CARD_FILE
    if side_card.is_file():
        return side_card.read_text(encoding="utf-8")
    return _written_card(meta)


def _written_card(meta: dict) -> str:
    """A card for weights without one: front matter, how to feed and read the model, where its settings are."""
    from huggingface_hub import ModelCard

    max_length = int(meta.get("max_length", 256))
    upstream = BACKBONES[backbone_of(meta)]
    base = f"sentence-transformers/{upstream}"
    shape = "A BERT model (6 layers, 384 hidden)" if upstream == BACKBONES["minilm"] else \
        "An MPNet model (12 layers, 768 hidden)"
    labels = ", ".join(f"{i} = {name}" for i, name in enumerate(LABELS))
    training = meta.get("training", {})
    trained = (f"It was fine-tuned for {training['steps']:,} steps on {training.get('examples', 0):,} pairs "
               f"({training.get('device', 'unknown device')}, {training.get('minutes', '?')} minutes); "
               f"the full settings are in Side's `{META_FILE}`.\n\n") if "steps" in training else ""
    body = f"""
# Side verifier (cross-encoder)

The cross-encoder of Side, a citation-verification system for Wikipedia: given
a claim in its Wikipedia context and a sentence (or a few sentences) of the cited source, it predicts
whether the source **supports** the claim. {shape} initialised from
[{base}](https://huggingface.co/{base}). {trained}Labels (softmax over 3 logits):
{labels}. English only; at most {max_length} tokens per pair.

This directory was written by `side export hf`: every weight in fp32, including the word embeddings
that Side's own copy leaves out (they were frozen in training and load from the offline
{upstream} there). It scores like Side's own inference path in fp32.

## Input

Side builds the first text as `article title [SEP] section [SEP] left context ending with the
claim sentence` and the second as the source passage; a bare `(claim, sentence)` pair works too.
When a pair is longer than {max_length} tokens, Side cuts the first text from the **left** (the
words nearest the citation survive) and keeps at least 60% of the budget for the passage; the
loaders below truncate from the right instead, so only pairs that fit score exactly as in Side.

## Usage

```python
from sentence_transformers import CrossEncoder

model = CrossEncoder("PATH/TO/THIS/DIRECTORY")
probs = model.predict(
    [("Paris [SEP] Paris is the capital of France.", "Paris is the capital and largest city of France.")],
    apply_softmax=True,
)  # columns: {", ".join(LABELS)}
```

```python
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("PATH/TO/THIS/DIRECTORY")
model = AutoModelForSequenceClassification.from_pretrained("PATH/TO/THIS/DIRECTORY").eval()
batch = tokenizer(["Paris is the capital of France."], ["Paris is the capital and largest city of France."],
                  padding=True, truncation=True, return_tensors="pt")
with torch.inference_mode():
    probs = model(**batch).logits.softmax(-1)
print({{model.config.id2label[i]: float(p) for i, p in enumerate(probs[0])}})
```

In Side, the cross-encoder is one part of the verdict: sentences of the source are chosen first
(bi-encoder and BM25), the model judges each and the best three together, and a logistic combiner
(not part of this export) calibrates its SUPPORTS probability with similarity and coverage signals.

## Licence

MIT, as Side. The base model is Apache-2.0. These weights are not the shipped ones (they had no
model card of their own): their training settings are in `{META_FILE}` of the model they were
exported from, and the training data and its licences in the card of Side's shipped verifier.
"""
    return str(ModelCard(f"---\n{card_metadata(base).to_yaml()}\n---\n{body}"))

"""Contrastive and document-level training pairs: the cases a sentence-level NLI mix never shows.

The shipped cross-encoder learnt from single NLI sentences, and every pair that carried an article
title was a WiCE negative, so "title present" meant "not supported". The sets read here fix both:

* **VitaminC** (CC BY-SA 3.0): Wikipedia claims against a sentence from before and after a
  factual revision; the same claim is supported by one sentence and refuted (or not backed) by a
  nearly identical one, and each pair carries its article's title whatever its label.
* **Fool Me Twice** (Apache-2.0, Wikipedia text): hard Wikipedia claims with their article, section
  and gold evidence; the retrieved sentences that are not gold are same-page hard negatives.
* **FactCG CG2C-doc** (MIT), **SummEdits** (Apache-2.0), **FIB** (CC BY 4.0): a document (a chunk of
  several sentences) against a claim that needs several of them, consistent or lightly edited.

A document pair is kept only when the document fits one chunk (``chunk_words``), for both labels
alike: a long document cannot say which chunk supports a summary, and keeping long documents for
one label only would teach premise length (:mod:`side.training.shortcut` checks for that).
Twins of one claim or one document share a ``group``, so the trainer batches them together and its
ranking term sees the supporting premise beside the one that lacks the detail.
"""

from __future__ import annotations

import ast
import json
import re
import zlib
from collections.abc import Iterable
from pathlib import Path

from side.data import read_jsonl
from side.training.trainset import Example

__all__ = [
    "CONTRASTIVE_SETS", "CHUNK_WORDS", "GROUP_BASE", "contrastive_examples", "detokenize",
    "factcg_examples", "fib_examples", "fm2_examples", "summedits_examples", "vitaminc_examples",
]

#: Words of one document chunk (about 400 tokens of MiniLM's word pieces).
CHUNK_WORDS = 320
#: First group id of contrastive examples, above the in-domain and feedback groups of trainset.
GROUP_BASE = 200_000_000

_LABELS = {"SUPPORTS": "S", "REFUTES": "R", "NOT ENOUGH INFO": "N"}
_PTB = {"-LRB-": "(", "-RRB-": ")", "-LSB-": "[", "-RSB-": "]", "-LCB-": "{", "-RCB-": "}", "-COLON-": ":"}
_SPACE_BEFORE = re.compile(r" ([.,;:!?%)\]}'’]|'s|n't)")
_SPACE_AFTER = re.compile(r"([(\[{$]) ")


def detokenize(text: str) -> str:
    """FEVER-style tokenised text ("Minogue 's ( BPI )") as written ("Minogue's (BPI)")."""
    for token, char in _PTB.items():
        text = text.replace(token, char)
    text = text.replace("\ufffd", " ").replace("_", " ")
    text = _SPACE_AFTER.sub(r"\1", _SPACE_BEFORE.sub(r"\1", " ".join(text.split())))
    return text.replace(" ` ", " '").replace("`` ", '"').replace("``", '"').replace(" ''", '"').replace("''", '"')


def _group(key: str) -> int:
    """A stable group id for ``key`` (a case or document id), within the contrastive range."""
    return GROUP_BASE + zlib.crc32(key.encode("utf-8")) % 50_000_000


def _fits(text: str, chunk_words: int) -> bool:
    return 0 < len(text.split()) <= chunk_words


def vitaminc_examples(data_dir: Path) -> list[Example]:
    """VitaminC real and synthetic pairs, titled with their article; a case's twins share a group."""
    out: list[Example] = []
    for name in ("real", "synthetic"):
        path = data_dir / "train" / "vitaminc" / f"{name}.jsonl"
        if not path.is_file():
            continue
        for r in read_jsonl(path):
            label = _LABELS.get(r.get("label", ""))
            if label and r.get("claim") and r.get("evidence"):
                out.append(Example(detokenize(r.get("page", "")), detokenize(r["claim"]), detokenize(r["evidence"]),
                                   label, f"vitaminc_{name}", _group(f"vitaminc:{r.get('case_id', r['claim'])}")))
    return out


def _evidence_list(value: object) -> list[dict]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, dict)]
    if isinstance(value, str) and value.strip():
        try:
            parsed = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return []
        return [v for v in parsed if isinstance(v, dict)] if isinstance(parsed, list) else []
    return []


def fm2_examples(data_dir: Path, negatives: int = 1) -> list[Example]:
    """Fool Me Twice: the claim against its gold evidence (S / R) and against retrieved sentences of
    the same article that are not gold (N), all titled with the article and its section."""
    out: list[Example] = []
    for split in ("dev", "test"):
        path = data_dir / "train" / "fool_me_twice" / f"{split}.jsonl"
        if not path.is_file():
            continue
        for r in read_jsonl(path):
            label = _LABELS.get(r.get("label", ""))
            gold = _evidence_list(r.get("gold_evidence"))
            if not label or not gold or not r.get("text"):
                continue
            title, group = r.get("wikipedia_page", ""), _group(f"fm2:{r.get('id', r['text'])}")
            context = r["text"]
            passage = " ".join(g.get("text", "") for g in gold).strip()
            out.append(Example(title, context, passage, label, "fm2", group))
            gold_texts = {g.get("text", "") for g in gold}
            others = [e.get("text", "") for e in _evidence_list(r.get("retrieved_evidence"))
                      if e.get("text") and e.get("text") not in gold_texts]
            out += [Example(title, context, text, "N", "fm2", group) for text in others[:negatives]]
    return out


def _list_text(value: object) -> list[str]:
    if isinstance(value, list):
        return [str(v) for v in value]
    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        return [str(value)]
    return [str(v) for v in parsed] if isinstance(parsed, list) else [str(parsed)]


def factcg_examples(data_dir: Path, chunk_words: int = CHUNK_WORDS) -> list[Example]:
    """FactCG CG2C-doc: a claim that needs several sentences of the document (S) or is not grounded (X)."""
    path = data_dir / "train" / "factcg" / "CG2C_doc.jsonl"
    if not path.is_file():
        return []
    out: list[Example] = []
    for r in read_jsonl(path):
        doc, claims = r.get("text_a", ""), _list_text(r.get("text_b", ""))
        if not _fits(doc, chunk_words) or not claims or str(r.get("orig_label")) not in ("0", "1"):
            continue
        label = "S" if str(r.get("orig_label")) == "1" else "X"
        out.append(Example("", " ".join(claims), doc, label, "factcg", _group(f"factcg:{doc[:200]}")))
    return out


def summedits_examples(data_dir: Path, chunk_words: int = CHUNK_WORDS) -> list[Example]:
    """SummEdits: a document against a summary that is consistent (S) or lightly edited not to be (X)."""
    out: list[Example] = []
    for path in sorted((data_dir / "train" / "summedits").glob("summedits_*.json")):
        with path.open(encoding="utf-8") as fh:
            rows = json.load(fh)
        for r in rows:
            doc, summary, label = r.get("doc", ""), r.get("summary", ""), str(r.get("label"))
            if _fits(doc, chunk_words) and summary and label in ("0", "1"):
                out.append(Example("", summary, doc, "S" if label == "1" else "X", "summedits",
                                   _group(f"summedits:{doc[:200]}")))
    return out


def _fib_rows(data_dir: Path) -> Iterable[dict]:
    for path in sorted((data_dir / "train" / "fib" / "multiple_choice-dataset").glob("**/*.jsonl")):
        yield from read_jsonl(path)


def fib_examples(data_dir: Path, chunk_words: int = CHUNK_WORDS) -> list[Example]:
    """FIB: a news document with its consistent summary (S) and one inconsistent summary (X).

    A document appears under many distractor constructions; it gives its consistent summary once
    and one distractor (chosen by a stable hash), so the two labels stay balanced and the
    distractor generators' style cannot stand in for the label.
    """
    by_doc: dict[str, tuple[str, str, set[str]]] = {}
    for r in _fib_rows(data_dir):
        doc, choices, correct = _fib_text(r.get("input", "")), _list_text(r.get("list_choices", "[]")), \
            r.get("correct_choice")
        if not _fits(doc, chunk_words) or correct not in choices:
            continue
        key = str(r.get("id", doc[:200]))
        _, _, wrong = by_doc.setdefault(key, (doc, _fib_text(correct), set()))
        wrong.update(_fib_text(c) for c in choices if c != correct and c)
    out: list[Example] = []
    for key, (doc, correct, wrong) in by_doc.items():
        group = _group(f"fib:{key}")
        out.append(Example("", correct, doc, "S", "fib", group))
        if wrong:
            pick = min(wrong, key=lambda text: zlib.crc32(text.encode("utf-8")))
            out.append(Example("", pick, doc, "X", "fib", group))
    return out


_TAGS = re.compile(r"</?t>")


def _fib_text(text: str) -> str:
    """FIB's CNN/DM text is tokenised, lower-cased and wrapped in <t> tags: the tags go, spacing is undone."""
    return detokenize(_TAGS.sub(" ", text)).strip()


#: The contrastive and document-level sets by name (``side train verifier --contrastive NAME``).
CONTRASTIVE_SETS = {
    "vitaminc": vitaminc_examples,
    "fm2": fm2_examples,
    "factcg": factcg_examples,
    "summedits": summedits_examples,
    "fib": fib_examples,
}


def contrastive_examples(data_dir: str | Path, names: Iterable[str] = tuple(CONTRASTIVE_SETS)) -> list[Example]:
    """The named sets' examples, in a fixed order (absent files give none)."""
    data_dir = Path(data_dir)
    out: list[Example] = []
    for name in names:
        out += CONTRASTIVE_SETS[name](data_dir)
    return out

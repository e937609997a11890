"""Training pairs for the cross-encoder, from shared data whose licence allows a shipped model.

Only the files in :data:`SHIPPABLE` are read. Sets with non-commercial or unknown licences
(ANLI, AVeriTeC, WikiQA, TrecQA, QAGS, HealthVer, CovidFact, WANLI, CLIMATE-FEVER,
WikiFactCheck, Citation-Integrity) are for evaluation only and never appear here, and neither
does any file that ``side eval`` measures (WiCE claim dev, SciFact dev, Citation-Integrity dev).

Labels: ``S`` supports, ``R`` refutes, ``N`` not enough info, ``X`` "not supported" where a
binary dataset cannot tell refuted from not-enough-info (trained as P(R)+P(N)).
Hard negatives follow BERT-for-FEVER: lexically retrieved non-evidence sentences of the same
source become ``N``; evidence and its hard negatives share a ``group`` so the trainer can add
Side's ranking term (evidence above retrieved candidates).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from side.data import load_scifact_claims, load_scifact_corpus, load_wice, read_jsonl
from side.evidence import bm25_scores

log = logging.getLogger(__name__)

LABEL_IDS = {"S": 0, "R": 1, "N": 2, "X": 3}

_NLI = {"entailment": "S", "contradiction": "R", "neutral": "N", "not_entailment": "X",
        "supports": "S", "refutes": "R", "not enough info": "N", "partial": "X"}

#: (relative path, how many pairs to draw at most, licence) for plain NLI-style pair files.
SHIPPABLE: tuple[tuple[str, int, str], ...] = (
    ("train/fever_rte/fever_dev_rte.pairs.jsonl", 5000, "CC BY-SA 3.0"),
    ("train/fever_nli_binary/fever_nli_binary_test.pairs.jsonl", 2500, "BSD-3-Clause / CC BY-SA 3.0"),
    ("train/snli/snli_test.pairs.jsonl", 3000, "CC BY-SA 4.0"),
    ("train/mnli_3way_sample/mnli_matched_1k.pairs.jsonl", 1000, "MIT / MultiNLI"),
    ("train/mnli_3way_sample/mnli_mismatched_1k.pairs.jsonl", 1000, "MIT / MultiNLI"),
    ("train/mnli_binary/mnli_binary_test.pairs.jsonl", 2000, "BSD-3-Clause / MultiNLI"),
    ("train/factcheck_gpt/factcheck_gpt_stance.pairs.jsonl", 3305, "Apache-2.0"),
    ("train/q2/q2_cross_annotation.pairs.jsonl", 1088, "MIT"),
    ("train/begin/begin_wow_dev.pairs.jsonl", 430, "CC BY 4.0"),
    ("train/begin/begin_cmu_dev.pairs.jsonl", 416, "CC BY 4.0"),
)
VITAMINC_GLOB = "vitaminc_sample/train_*.jsonl"
SCIFACT_TRAIN = "scifact/claims_train.jsonl"
SCIFACT_CORPUS = "scifact/corpus.jsonl"
WICE_TRAIN = "wice/non_supported_tokens_train.jsonl"


@dataclass(frozen=True)
class Example:
    title: str
    context: str
    passage: str
    label: str
    source: str
    group: int = -1


def _nli_file(path: Path, limit: int, rng: random.Random, name: str) -> list[Example]:
    rows = [r for r in read_jsonl(path) if r.get("label") in _NLI and r.get("premise") and r.get("hypothesis")]
    rng.shuffle(rows)
    return [Example("", r["hypothesis"], r["premise"], _NLI[r["label"]], name) for r in rows[:limit]]


def _vitaminc(data_dir: Path) -> list[Example]:
    out = []
    for path in sorted(data_dir.glob(VITAMINC_GLOB)):
        for r in read_jsonl(path):
            if r.get("label") in _NLI:
                out.append(Example("", r["claim"], r["evidence"], _NLI[r["label"]], "vitaminc"))
    return out


def _hard_negatives(query: str, sentences: list[str], exclude: set[int], k: int) -> list[int]:
    scores = bm25_scores(query, sentences)
    order = [int(i) for i in scores.argsort()[::-1] if int(i) not in exclude]
    return order[:k]


def _scifact(data_dir: Path, group_start: int, negatives: int = 2) -> list[Example]:
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    out: list[Example] = []
    group = group_start
    for claim in load_scifact_claims(data_dir / SCIFACT_TRAIN):
        docs = claim.evidence or {d: [] for d in claim.cited_doc_ids}
        for doc_id, sets in docs.items():
            doc = corpus.get(doc_id)
            if doc is None:
                continue
            sentences = list(doc.sentences)
            rationale = {i for s in sets for i in s["sentences"]}
            for s in sets:
                label = "S" if s["label"] == "SUPPORT" else "R"
                text = " ".join(sentences[i] for i in s["sentences"] if i < len(sentences))
                out.append(Example("", claim.claim, text, label, "scifact", group))
            for i in _hard_negatives(claim.claim, sentences, rationale, negatives if sets else 1):
                out.append(Example("", claim.claim, sentences[i], "N", "scifact", group))
            group += 1
    return out


def _wice_train(data_dir: Path, group_start: int, negatives: int = 2) -> list[Example]:
    """WiCE sub-claims are partially supported: their gold sentences do not entail them (X)."""
    out: list[Example] = []
    group = group_start
    for claim in load_wice(data_dir / WICE_TRAIN):
        title, context = claim.title, f"{claim.context} {claim.claim}".strip()
        sentences = list(claim.evidence)
        gold = sorted(i for i in claim.gold_sentences if i < len(sentences))
        if gold:
            out.append(Example(title, context, " ".join(sentences[i] for i in gold), "X", "wice_train", group))
        meta_rows = {i for i, s in enumerate(sentences) if s.startswith("(meta data)")}
        for i in _hard_negatives(claim.claim, sentences, set(gold) | meta_rows, negatives):
            out.append(Example(title, context, sentences[i], "N", "wice_train", group))
        group += 1
    return out


def build_examples(data_dir: str | Path, seed: int = 13) -> list[Example]:
    """All training examples, deterministic for a given seed."""
    data_dir = Path(data_dir)
    rng = random.Random(seed)
    examples: list[Example] = []
    for relative, limit, _licence in SHIPPABLE:
        examples += _nli_file(data_dir / relative, limit, rng, Path(relative).parent.name)
    examples += _vitaminc(data_dir)
    examples += _scifact(data_dir, group_start=0)
    examples += _wice_train(data_dir, group_start=100_000)
    counts: dict[str, int] = {}
    for ex in examples:
        counts[ex.source] = counts.get(ex.source, 0) + 1
    log.info("training examples: %d %s", len(examples), counts)
    return examples


def units(examples: list[Example]) -> Iterator[list[Example]]:
    """Examples grouped so that evidence and its hard negatives land in one batch."""
    groups: dict[int, list[Example]] = {}
    for ex in examples:
        if ex.group < 0:
            yield [ex]
        else:
            groups.setdefault(ex.group, []).append(ex)
    yield from groups.values()

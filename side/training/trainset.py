"""Training pairs for the cross-encoder, from shared data whose licence allows a shipped model.

Only the files in :data:`SHIPPABLE` are read. Sets with non-commercial or unknown licences
(ANLI, AVeriTeC, WikiQA, TrecQA, QAGS, HealthVer, CovidFact, WANLI, CLIMATE-FEVER,
WikiFactCheck, Citation-Integrity) are for evaluation only and never appear here, and neither
does any file that ``side eval`` measures (WiCE claim dev, SciFact dev, Citation-Integrity dev).

Labels: ``S`` supports, ``R`` refutes, ``N`` not enough info, ``P`` partial (the passage backs the
claim's subject but not one of its details: a class of its own in a four-output model, "not
supported" in a three-output one), ``X`` "not supported" where a binary dataset cannot tell
refuted from not-enough-info (trained as P(R)+P(N)+P(P)).
Hard negatives follow BERT-for-FEVER: lexically retrieved non-evidence sentences of the same
source, and for SciFact the best sentence of abstracts BM25 retrieves that the claim does not
cite, become ``N``; a claim's evidence and its hard negatives share a ``group`` so the trainer
can add Side's ranking term (evidence above retrieved candidates).
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from side.data import WICE_META_PREFIX, load_scifact_claims, load_scifact_corpus, load_wice, read_jsonl
from side.retrieval.sparse import quiet_bm25s
from side.training.feedback import DismissReason, FeedbackAction, FeedbackRecord
from side.verify.evidence import bm25_scores
from side.verify.verifier import Query

__all__ = [
    "LABEL_IDS", "SHIPPABLE", "VITAMINC_GLOB", "SCIFACT_TRAIN", "SCIFACT_CORPUS", "WICE_TRAIN",
    "JOINED_SOURCES", "MIN_SUPPORTED_TOKENS", "Example", "IN_DOMAIN", "FEEDBACK_GROUPS", "build_examples",
    "feedback_examples", "joined_examples", "supported_part", "units", "word_count",
]

log = logging.getLogger(__name__)

LABEL_IDS = {"S": 0, "R": 1, "N": 2, "P": 3, "X": 4}

_NLI = {"entailment": "S", "contradiction": "R", "neutral": "N", "not_entailment": "X",
        "supports": "S", "refutes": "R", "not enough info": "N", "partial": "X"}

#: (relative path, licence) of the NLI-style pair files read in full. Every row is used (deduplicated
#: on premise and hypothesis): on a CPU one epoch still fits the time budget, and on a GPU more
#: epochs are cheap. The 3-way MNLI samples are subsets of ``mnli_binary`` with finer labels, so
#: they come first and the binary copies of the same pairs are dropped.
SHIPPABLE: tuple[tuple[str, str], ...] = (
    ("train/mnli_3way_sample/mnli_matched_1k.pairs.jsonl", "MIT / MultiNLI"),
    ("train/mnli_3way_sample/mnli_mismatched_1k.pairs.jsonl", "MIT / MultiNLI"),
    ("train/fever_rte/fever_dev_rte.pairs.jsonl", "CC BY-SA 3.0"),
    ("train/fever_nli_binary/fever_nli_binary_dev.pairs.jsonl", "BSD-3-Clause / CC BY-SA 3.0"),
    ("train/fever_nli_binary/fever_nli_binary_test.pairs.jsonl", "BSD-3-Clause / CC BY-SA 3.0"),
    ("train/fever_symmetric/fever_symmetric_v0.1_full.pairs.jsonl", "CC BY-SA 3.0"),
    ("train/fever_symmetric/fever_symmetric_v0.2_dev.pairs.jsonl", "CC BY-SA 3.0"),
    ("train/fever_symmetric/fever_symmetric_v0.2_test.pairs.jsonl", "CC BY-SA 3.0"),
    ("train/snli/snli_dev.pairs.jsonl", "CC BY-SA 4.0"),
    ("train/snli/snli_test.pairs.jsonl", "CC BY-SA 4.0"),
    ("train/mnli_binary/mnli_binary_dev.pairs.jsonl", "BSD-3-Clause / MultiNLI"),
    ("train/mnli_binary/mnli_binary_test.pairs.jsonl", "BSD-3-Clause / MultiNLI"),
    ("train/factcheck_gpt/factcheck_gpt_stance.pairs.jsonl", "Apache-2.0"),
    ("train/q2/q2_cross_annotation.pairs.jsonl", "MIT"),
    ("train/q2/q2_dodeca_consistent.pairs.jsonl", "MIT"),
    ("train/q2/q2_dodeca_inconsistent.pairs.jsonl", "MIT"),
    ("train/q2/q2_memnet_consistent.pairs.jsonl", "MIT"),
    ("train/q2/q2_memnet_inconsistent.pairs.jsonl", "MIT"),
    ("train/begin/begin_wow_dev.pairs.jsonl", "CC BY 4.0"),
    ("train/begin/begin_wow_test.pairs.jsonl", "CC BY 4.0"),
    ("train/begin/begin_cmu_dev.pairs.jsonl", "CC BY 4.0"),
)
VITAMINC_GLOB = "vitaminc_sample/train_*.jsonl"
SCIFACT_TRAIN = "scifact/claims_train.jsonl"
SCIFACT_CORPUS = "scifact/corpus.jsonl"
WICE_TRAIN = "wice/non_supported_tokens_train.jsonl"
#: NLI pair files whose pairs are joined into compound claims (:func:`joined_examples`):
#: FEVER's claims are written like Wikipedia's, SNLI has a supported and an unsupported
#: hypothesis for the same premise.
JOINED_SOURCES: tuple[str, ...] = (
    "train/fever_rte/fever_dev_rte.pairs.jsonl",
    "train/snli/snli_dev.pairs.jsonl",
    "train/snli/snli_test.pairs.jsonl",
)
#: A supported variant keeps at least this many word tokens of the sub-claim (else it is skipped).
MIN_SUPPORTED_TOKENS = 3


_SPACE_BEFORE = re.compile(r"\s+([.,;:!?%)\]'’])")
_DANGLING = re.compile(r"\s*[,;:]+(?=\s*([.!?]|$))|^[\s,;:.]+")


def supported_part(claim: str, tokens: Sequence[str], unsupported: Sequence[bool]) -> str:
    """The claim without the tokens WiCE marks unsupported, spaced as in the claim.

    Tokens are found in order in the claim so that "ex-pats" stays one word; punctuation left
    dangling by a removed word (a comma before the final period) is dropped.
    """
    out: list[str] = []
    cursor, space = 0, False
    for token, bad in zip(tokens, unsupported, strict=True):
        start = claim.find(token, cursor)
        if start < 0:  # tokenisation that does not match the text: fall back to spaced tokens
            start, gap = cursor, " "
        else:
            gap = claim[cursor:start]
            cursor = start + len(token)
        space = space or bool(gap.strip() == "" and gap)
        if not bad:
            out.append((" " if space and out else "") + token)
            space = False
    text = _SPACE_BEFORE.sub(r"\1", "".join(out))
    return re.sub(r"\s{2,}", " ", _DANGLING.sub("", text)).strip()


def word_count(text: str) -> int:
    """Word tokens (``\\w+`` runs) in ``text``."""
    return len(re.findall(r"\w+", text))


@dataclass(frozen=True)
class Example:
    title: str
    context: str
    passage: str
    label: str
    source: str
    group: int = -1


def _nli_file(path: Path, seen: set[tuple[str, str]], name: str) -> list[Example]:
    """Pairs of one file not already taken from an earlier file (same premise and hypothesis)."""
    out = []
    for r in read_jsonl(path):
        if r.get("label") not in _NLI or not r.get("premise") or not r.get("hypothesis"):
            continue
        key = (" ".join(r["premise"].lower().split()), " ".join(r["hypothesis"].lower().split()))
        if key in seen:
            continue
        seen.add(key)
        out.append(Example("", r["hypothesis"], r["premise"], _NLI[r["label"]], name))
    return out


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


def _other_abstracts(claims: list, corpus: dict, k: int) -> dict[int, list[str]]:
    """Per claim, the abstracts BM25 ranks highest that the claim does not cite (BERT-for-FEVER's
    negatives from other sources: in the open setting these are what retrieval brings back)."""
    bm25s = quiet_bm25s()
    doc_ids = list(corpus)
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize([f"{corpus[d].title} {' '.join(corpus[d].sentences)}" for d in doc_ids],
                                   stopwords="en", show_progress=False), show_progress=False)
    queries = bm25s.tokenize([c.claim for c in claims], stopwords="en", show_progress=False)
    hits, _ = retriever.retrieve(queries, k=min(k + 8, len(doc_ids)), show_progress=False, n_threads=0)
    out = {}
    for claim, row in zip(claims, hits, strict=False):
        cited = set(claim.cited_doc_ids) | set(claim.evidence)
        out[claim.id] = [doc_ids[int(i)] for i in row if doc_ids[int(i)] not in cited][:k]
    return out


def _scifact(data_dir: Path, group_start: int, negatives: int = 2, other_sources: int = 2) -> list[Example]:
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    claims = load_scifact_claims(data_dir / SCIFACT_TRAIN)
    others = _other_abstracts(claims, corpus, other_sources)
    out: list[Example] = []
    group = group_start
    for claim in claims:
        for doc_id in others[claim.id]:
            sentences = list(corpus[doc_id].sentences)
            for i in _hard_negatives(claim.claim, sentences, set(), 1):
                out.append(Example("", claim.claim, sentences[i], "N", "scifact_other", group))
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


def _wice_train(data_dir: Path, group_start: int, negatives: int = 2,
                supported_parts: bool = False) -> list[Example]:
    """WiCE sub-claims are partially supported: their gold sentences do not entail them (X).

    With ``supported_parts``, what is left of a sub-claim once the words WiCE marks unsupported
    are deleted is trained as entailed by the same sentences (S), so the model sees the same page
    and sentences on both sides of partial support.
    """
    out: list[Example] = []
    group = group_start
    claims = load_wice(data_dir / WICE_TRAIN)
    # The token marks are not in WiceClaim: the raw records are read only when they are used.
    records = list(read_jsonl(data_dir / WICE_TRAIN)) if supported_parts else [{}] * len(claims)
    for claim, rec in zip(claims, records, strict=True):
        title, context = claim.title, f"{claim.context} {claim.claim}".strip()
        sentences = list(claim.evidence)
        gold = sorted(i for i in claim.gold_sentences if i < len(sentences))
        if gold:
            passage = " ".join(sentences[i] for i in gold)
            out.append(Example(title, context, passage, "X", "wice_train", group))
            part = supported_part(rec["claim"], rec["claim_tokens"], rec["non_supported_spans"]) if rec else ""
            if part and part != claim.claim and word_count(part) >= MIN_SUPPORTED_TOKENS:
                out.append(Example(title, f"{claim.context} {part}".strip(), passage, "S", "wice_train", group))
        meta_rows = {i for i, s in enumerate(sentences) if s.startswith(WICE_META_PREFIX)}
        for i in _hard_negatives(claim.claim, sentences, set(gold) | meta_rows, negatives):
            out.append(Example(title, context, sentences[i], "N", "wice_train", group))
        group += 1
    return out


#: Opening words that are not names, so "A man ..." becomes "..., and a man ...".
_LOWERABLE = frozenset("A An The Two Three Four Some Several Many People Men Women Children Kids He She "
                       "They It There This That These Those".split())


def _clause(text: str, first: bool) -> str:
    """A hypothesis as one clause of a compound claim: tokenised spacing undone, final stop dropped,
    and, after the first clause, a lower-case start unless its first word is a name."""
    text = re.sub(r"\s+([.,;:!?'])", r"\1", " ".join(text.split())).rstrip(" .")
    if not first and text[:1].isupper() and not text[1:2].isupper() and text.split(" ", 1)[0] in _LOWERABLE:
        text = text[0].lower() + text[1:]
    return text


def _joined(*clauses: str) -> str:
    return ", and ".join(_clause(c, i == 0) for i, c in enumerate(clauses)) + "."


def _pairs_by_premise(path: Path) -> dict[str, dict[str, list[str]]]:
    out: dict[str, dict[str, list[str]]] = {}
    for r in read_jsonl(path):
        label = _NLI.get(r.get("label", ""))
        if label in ("S", "R", "N") and r.get("premise") and r.get("hypothesis"):
            out.setdefault(r["premise"], {}).setdefault(label, []).append(r["hypothesis"])
    return out


def joined_examples(data_dir: str | Path, per_file: int = 3000, seed: int = 13) -> list[Example]:
    """Compound claims with one part the source does not back: partial support as claims are written.

    Wikipedia claims join several facts in one sentence, and the commonest error on WiCE is a claim
    whose source backs all but one of them called supported. A single NLI hypothesis never shows that
    case, so pairs of one file are joined with ", and":

    * a supported hypothesis and another premise's supported one, against the first premise
      only: ``X`` (the second part is not in the source); against both premises: ``S``, so a
      joined claim is not unsupported because it is joined;
    * against one premise, its supported hypothesis and its neutral one (``X``) or its
      contradicted one (``R``), in either order.

    Both sides of each case share the premise, so only what the claim adds decides the label.
    """
    data_dir = Path(data_dir)
    rng = random.Random(seed)
    out: list[Example] = []
    for relative in JOINED_SOURCES:
        path = data_dir / relative
        if not path.is_file():
            continue
        name = f"joined_{Path(relative).parent.name}"
        premises = [(p, labels) for p, labels in _pairs_by_premise(path).items() if labels.get("S")]
        rng.shuffle(premises)
        premises = premises[:per_file]
        for n, (premise, labels) in enumerate(premises):
            supported = rng.choice(labels["S"])
            if len(premises) > 1:  # any premise but this one
                other_premise, other = premises[(n + 1 + rng.randrange(len(premises) - 1)) % len(premises)]
                second = rng.choice(other["S"])
                claim = _joined(supported, second) if n % 2 else _joined(second, supported)
                out.append(Example("", claim, premise, "X", name))
                both = f"{premise} {other_premise}" if n % 2 else f"{other_premise} {premise}"
                out.append(Example("", claim, both, "S", name))
            for label in ("N", "R"):
                if labels.get(label):
                    part = rng.choice(labels[label])
                    claim = _joined(supported, part) if rng.random() < 0.5 else _joined(part, supported)
                    out.append(Example("", claim, premise, "X" if label == "N" else "R", name))
    return out


#: Sources drawn from the tasks Side is judged on (Wikipedia citations, scientific claims).
IN_DOMAIN = ("wice_train", "scifact", "scifact_other")


def build_examples(data_dir: str | Path, negatives: int = 2, in_domain_repeat: int = 1,
                   joined: int = 0, supported_parts: bool = False) -> list[Example]:
    """All training examples, in a fixed order (the trainer shuffles them with its seed).

    ``negatives`` is the number of same-source hard negatives per WiCE / SciFact evidence;
    ``in_domain_repeat`` repeats those in-domain examples (as separate groups), because they are a
    few thousand among ~80,000 general NLI pairs; ``joined`` premises per file of
    :data:`JOINED_SOURCES` give compound claims with an unsupported part (:func:`joined_examples`);
    ``supported_parts`` adds WiCE sub-claims' supported parts (:func:`_wice_train`).
    """
    data_dir = Path(data_dir)
    examples: list[Example] = []
    seen: set[tuple[str, str]] = set()
    for relative, _licence in SHIPPABLE:
        examples += _nli_file(data_dir / relative, seen, Path(relative).parent.name)
    examples += _vitaminc(data_dir)
    if joined:
        examples += joined_examples(data_dir, per_file=joined)
    in_domain = _scifact(data_dir, group_start=0, negatives=negatives)
    in_domain += _wice_train(data_dir, group_start=100_000, negatives=negatives, supported_parts=supported_parts)
    for copy in range(max(1, in_domain_repeat)):
        examples += [replace(ex, group=ex.group + copy * 1_000_000) for ex in in_domain]
    counts: dict[str, int] = {}
    for ex in examples:
        counts[ex.source] = counts.get(ex.source, 0) + 1
    log.info("training examples: %d %s", len(examples), counts)
    return examples


#: First group id of feedback pairs, above those of the in-domain examples and their copies.
FEEDBACK_GROUPS = 100_000_000


def feedback_examples(records: list[FeedbackRecord]) -> list[Example]:
    """Training pairs from patrollers' decisions (a ``side-feedback export``), read as the verifier reads them.

    * accepted: the suggested source's sentence supports the claim (``S``), and the cited source's
      best sentence does not (``X``);
    * dismissed ``source-is-fine``: the cited source's best sentence supports the claim (``S``);
    * dismissed ``suggestion-wrong``: the suggested source's sentence does not support it (``X``);
    * other dismissals say nothing about either source and give no pair.

    The pairs of one review share a group, so the trainer batches them together.
    """
    out: list[Example] = []
    for n, record in enumerate(records):
        query = Query(record.claim, record.article_title, record.section, record.context)
        suggested = record.suggestion.evidence if record.suggestion else ""
        cited = record.evidence[0].text if record.evidence else ""
        pairs: list[tuple[str, str]] = []
        if record.action is FeedbackAction.ACCEPT:
            pairs = [(suggested, "S"), (cited, "X")]
        elif record.reason == DismissReason.SOURCE_IS_FINE:
            pairs = [(cited, "S")]
        elif record.reason == DismissReason.SUGGESTION_WRONG:
            pairs = [(suggested, "X")]
        for passage, label in pairs:
            if passage:
                pair = query.pair(passage)
                out.append(Example(pair.title, pair.context, passage, label, "feedback", FEEDBACK_GROUPS + n))
    return out


def units(examples: list[Example]) -> Iterator[list[Example]]:
    """Examples grouped so that evidence and its hard negatives land in one batch."""
    groups: dict[int, list[Example]] = {}
    for ex in examples:
        if ex.group < 0:
            yield [ex]
        else:
            groups.setdefault(ex.group, []).append(ex)
    yield from groups.values()

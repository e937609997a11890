"""Training pairs for a cross-encoder that judges chunks: the claim against consecutive sentences.

``side train verifier --chunks`` trains the model the verifier then runs on chunks
(:mod:`side.verify.chunks`): a claim against a span of about :data:`~side.verify.chunks.CHUNK_WORDS`
words of its source, the document's score the best chunk's (MiniCheck's recipe). The mix:

* **WiCE train** sub-claims (Wikipedia claims against the web page they cite): the chunk around
  their gold sentences does not back all of the claim (``P``, partial); the same chunk backs the
  claim with the words WiCE marks unsupported deleted (``S``); a chunk of the same page around the
  best BM25 sentence that holds no gold sentence does not bear on it (``N``). Every pair carries
  the article's title, section and context, as the verifier reads them, whatever its label.
* **SciFact train** claims against the chunk around their rationale (``S`` / ``R``), a chunk of
  the same abstract without it and the best chunk of an abstract BM25 retrieves that the claim does
  not cite (``N``).
* The contrastive sets of :mod:`side.training.contrastive`: VitaminC (its not-enough-info twins,
  a revised sentence that no longer states the detail, are ``P``), Fool Me Twice, and the
  FactCG, SummEdits and FIB documents that fit one chunk.
* A sample of the general NLI pairs and of the compound claims with one unsupported part
  (:func:`side.training.trainset.joined_examples`), so sentence-level judgement is not forgotten.

Each source is sampled to a cap with the run's seed; the pairs of one claim or one case keep their
group, so the trainer's ranking term sees the supporting premise beside the ones that lack it.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from dataclasses import replace
from pathlib import Path

from side.data import WICE_META_PREFIX, load_scifact_claims, load_scifact_corpus, load_wice, read_jsonl
from side.evaluation.verify import wice_query
from side.training.contrastive import (
    factcg_examples,
    fib_examples,
    fm2_examples,
    summedits_examples,
    vitaminc_examples,
)
from side.training.holdout import held_out, scifact_key, wice_key
from side.training.trainset import (
    MIN_SUPPORTED_TOKENS,
    SCIFACT_CORPUS,
    SCIFACT_TRAIN,
    SHIPPABLE,
    WICE_TRAIN,
    Example,
    _hard_negatives,
    _nli_file,
    _other_abstracts,
    joined_examples,
    supported_part,
    word_count,
)
from side.verify.chunks import CHUNK_WORDS, chunk_around, chunk_text
from side.verify.crossencoder import Pair

__all__ = ["CHUNK_CAPS", "chunked_examples", "scifact_chunks", "wice_chunks"]

log = logging.getLogger(__name__)

#: Pairs drawn at most from each source (``None``: all). Chosen so one epoch takes about an hour
#: on two bf16 CPU cores: the chunk pairs (WiCE, SciFact, documents) are long and few, the
#: sentence pairs short and many.
CHUNK_CAPS: dict[str, int | None] = {
    "wice_chunks": None, "scifact_chunks": None, "factcg": None, "summedits": None, "fib": None,
    "fm2": None, "vitaminc": 9000, "nli": 3000, "joined": 2000,
}
#: Copies of the WiCE chunks (the only Wikipedia-citation pairs: 374 sub-claims).
WICE_REPEAT = 2
#: Group ids of the chunk pairs (above the contrastive sets' range): a WiCE claim's is this plus
#: its index in WiCE train ...
GROUP_BASE = 300_000_000
#: ... a SciFact claim's this plus its id.
SCIFACT_GROUP_BASE = GROUP_BASE + 10_000_000


def _span_of(sentences: list[str], core: list[int], words: int) -> tuple[int, int] | None:
    """The chunk around ``core``, or None when the core's own span is far longer than a chunk
    (gold sentences pages apart: no chunk holds them)."""
    start, end = min(core), max(core) + 1
    if sum(len(s.split()) for s in sentences[start:end]) > 2 * words:
        return None
    return chunk_around(sentences, core, words)


def wice_chunks(data_dir: Path, words: int = CHUNK_WORDS, negatives: int = 2, holdout: float = 0.0) -> list[Example]:
    """WiCE train sub-claims against chunks of their page: ``P`` / ``S`` (supported part) / ``N``;
    the claims held out for the combiner (:mod:`side.training.holdout`) left out."""
    path = data_dir / WICE_TRAIN
    if not path.is_file():
        return []
    out: list[Example] = []
    for n, (claim, rec) in enumerate(zip(load_wice(path), read_jsonl(path), strict=True)):
        if held_out(wice_key(claim.id), holdout):
            continue
        sentences = list(claim.evidence)
        query = wice_query(claim)
        part = supported_part(rec["claim"], rec["claim_tokens"], rec["non_supported_spans"])
        supported = replace(query, claim=part) if part and part != claim.claim and \
            word_count(part) >= MIN_SUPPORTED_TOKENS else None
        group = GROUP_BASE + n
        gold_spans = []
        for gold_set in claim.supporting_sentences:
            core = sorted(i for i in gold_set if i < len(sentences))
            span = _span_of(sentences, core, words) if core else None
            if span is None or span in gold_spans:
                continue
            gold_spans.append(span)
            chunk = chunk_text(sentences, span)
            out.append(_example(query.pair(chunk), "P", "wice_chunks", group))
            if supported is not None:
                out.append(_example(supported.pair(chunk), "S", "wice_chunks", group))
        if not gold_spans:
            continue
        covered = {i for a, b in gold_spans for i in range(a, b)} | claim.gold_sentences
        meta_rows = {i for i, s in enumerate(sentences) if s.startswith(WICE_META_PREFIX)}
        taken: list[tuple[int, int]] = []
        for i in _hard_negatives(claim.claim, sentences, covered | meta_rows, 4 * negatives):
            span = chunk_around(sentences, [i], words)
            if any(a < span[1] and span[0] < b for a, b in taken + gold_spans) or \
                    covered & set(range(*span)):
                continue
            taken.append(span)
            out.append(_example(query.pair(chunk_text(sentences, span)), "N", "wice_chunks", group))
            if len(taken) >= negatives:
                break
    return out


def scifact_chunks(data_dir: Path, words: int = CHUNK_WORDS, holdout: float = 0.0) -> list[Example]:
    """SciFact train claims against chunks of abstracts: rationale ``S`` / ``R``, others ``N``;
    the claims held out for the combiner left out."""
    if not (data_dir / SCIFACT_TRAIN).is_file():
        return []
    corpus = load_scifact_corpus(data_dir / SCIFACT_CORPUS)
    claims = load_scifact_claims(data_dir / SCIFACT_TRAIN)
    others = _other_abstracts(claims, corpus, 1)
    out: list[Example] = []
    for claim in claims:
        if held_out(scifact_key(claim.id), holdout):
            continue
        group = SCIFACT_GROUP_BASE + claim.id
        for doc_id in others[claim.id]:
            sentences = list(corpus[doc_id].sentences)
            for i in _hard_negatives(claim.claim, sentences, set(), 1):
                span = chunk_around(sentences, [i], words)
                out.append(Example("", claim.claim, chunk_text(sentences, span), "N", "scifact_chunks", group))
        for doc_id, sets in claim.evidence.items():
            doc = corpus.get(doc_id)
            if doc is None:
                continue
            sentences = list(doc.sentences)
            rationale: set[int] = set()
            for s in sets:
                core = sorted(i for i in s["sentences"] if i < len(sentences))
                gold_span = _span_of(sentences, core, words) if core else None
                if gold_span is None:
                    continue
                rationale |= set(range(*gold_span))
                label = "S" if s["label"] == "SUPPORT" else "R"
                out.append(Example("", claim.claim, chunk_text(sentences, gold_span), label, "scifact_chunks", group))
            gold = rationale | {j for s in sets for j in s["sentences"]}
            for i in _hard_negatives(claim.claim, sentences, rationale, 1):
                span = chunk_around(sentences, [i], words)
                if not gold & set(range(*span)):
                    out.append(Example("", claim.claim, chunk_text(sentences, span), "N", "scifact_chunks", group))
    return out


def _example(pair: Pair, label: str, source: str, group: int) -> Example:
    return Example(pair.title, pair.context, pair.passage, label, source, group)


def _nli_sample(data_dir: Path) -> list[Example]:
    seen: set[tuple[str, str]] = set()
    out: list[Example] = []
    for relative, _licence in SHIPPABLE:
        if (data_dir / relative).is_file():
            out += _nli_file(data_dir / relative, seen, Path(relative).parent.name)
    return out


def _vitaminc_partial(data_dir: Path) -> list[Example]:
    """VitaminC with its not-enough-info twins as ``P``: the revised sentence keeps the claim's
    subject and drops the detail the claim states."""
    return [replace(ex, label="P") if ex.label == "N" else ex for ex in vitaminc_examples(data_dir)]


def _sample(examples: list[Example], cap: int | None, rng: random.Random) -> list[Example]:
    """At most ``cap`` examples, whole groups at a time (twins stay together)."""
    if cap is None or len(examples) <= cap:
        return examples
    groups: dict[int, list[Example]] = {}
    singles: list[list[Example]] = []
    for ex in examples:
        if ex.group < 0:
            singles.append([ex])
        else:
            groups.setdefault(ex.group, []).append(ex)
    units = list(groups.values()) + singles
    rng.shuffle(units)
    out: list[Example] = []
    for unit in units:
        if len(out) >= cap:
            break
        out += unit
    return out


def chunked_examples(data_dir: str | Path, seed: int = 13, words: int = CHUNK_WORDS,
                     caps: dict[str, int | None] | None = None, holdout: float = 0.0) -> list[Example]:
    """The chunk recipe's training pairs, in a fixed order for ``seed``, without the WiCE and
    SciFact claims of the ``holdout`` share (:mod:`side.training.holdout`)."""
    data_dir = Path(data_dir)
    caps = {**CHUNK_CAPS, **(caps or {})}
    rng = random.Random(seed)
    doc_words = words + 10  # a document chunk may run a sentence's tail over; the model cuts it
    sources = {
        "wice_chunks": lambda: wice_chunks(data_dir, words, holdout=holdout),
        "scifact_chunks": lambda: scifact_chunks(data_dir, words, holdout=holdout),
        "factcg": lambda: factcg_examples(data_dir, doc_words),
        "summedits": lambda: summedits_examples(data_dir, doc_words),
        "fib": lambda: fib_examples(data_dir, doc_words),
        "fm2": lambda: fm2_examples(data_dir),
        "vitaminc": lambda: _vitaminc_partial(data_dir),
        "nli": lambda: _nli_sample(data_dir),
        "joined": lambda: [replace(ex, label="P") if ex.label == "X" else ex
                           for ex in joined_examples(data_dir, per_file=caps["joined"] or 3000, seed=seed)],
    }
    examples: list[Example] = []
    for name, build in sources.items():
        picked = _sample(build(), caps.get(name), rng)
        if name == "wice_chunks":
            picked = [replace(ex, group=ex.group + copy * 1_000_000) for copy in range(WICE_REPEAT) for ex in picked]
        examples += picked
    log.info("chunk training pairs: %d %s", len(examples),
             dict(Counter(f"{ex.source}:{ex.label}" for ex in examples)))
    return examples

"""Choose ``judge.quote_cut``, the score Side's verifier must give an LLM judge's quotes, on WiCE train only.

A quote found on the page proves it is there, not that it backs the claim: an endpoint that
obeys a hostile page answers "supported" and quotes any sentence of it. So the cascade takes a
supported or partially supported verdict only when Side's verifier, reading the quotes alone
(:func:`side.verify.cascade.score_quotes`, exactly what the cascade runs), scores them at or above
the cut. This measures, on WiCE train (``wice/non_supported_tokens_train.jsonl``: partially
supported claims, their gold supporting sentences and the unsupported tokens):

* honest quotes, what a judge that read the page well would quote: the claim against its gold
  supporting sentences (a partially supported verdict), and the claim's supported part (the
  claim without the tokens WiCE marks unsupported, at least three words) against the same
  sentences (a supported verdict);
* unrelated quotes, what an obliging judge could quote: one sentence of the same page outside
  the gold sentences and their neighbours (at least three words, no WiCE metadata line), drawn
  at random (seed 13), against the claim and against its supported part.

**The rule:** the cut is the highest score that keeps ``--keep`` (0.9) of the honest quotes,
i.e. their (1 - keep) quantile, rounded down to 4 decimals. It prints the cut, the share of
honest quotes it keeps and the share of unrelated quotes it lets through (per kind), and the
same at a few other cuts for comparison. No dev or test data is read::

    SIDE_DATA_DIR=../shared/data python benchmarks/judge_quote_cut.py [--keep 0.9] [--claims N]

``--claims N`` takes the first N claims only (a quicker, rougher choice).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import random
import time
from dataclasses import dataclass

import numpy as np

from side.config import load_config
from side.data import WICE_META_PREFIX, read_jsonl
from side.training.trainset import MIN_SUPPORTED_TOKENS, WICE_TRAIN, supported_part, word_count
from side.verify.cascade import score_quotes
from side.verify.judge import MIN_QUOTE_WORDS
from side.verify.verifier import Query, Verifier

log = logging.getLogger("judge_quote_cut")

#: Kinds of quote measured; the first two are honest, the last two unrelated.
HONEST = ("gold_for_claim", "gold_for_supported_part")
UNRELATED = ("unrelated_for_claim", "unrelated_for_supported_part")


@dataclass(frozen=True)
class QuoteItem:
    """One (claim, quotes) pair the verifier scores, and what kind of quote it is."""

    query: Query
    quotes: tuple[str, ...]
    kind: str


def quote_items(records: list[dict], seed: int = 13) -> list[QuoteItem]:
    """Honest and unrelated quotes of each WiCE train claim that has gold supporting sentences."""
    rng = random.Random(seed)
    items: list[QuoteItem] = []
    for rec in records:
        page = [s.removeprefix(WICE_META_PREFIX) for s in rec.get("evidence", [])]
        gold = sorted({i for group in rec.get("supporting_sentences", []) for i in group})
        if not gold:
            continue
        meta = rec.get("meta", {})
        title, section = meta.get("claim_title", "") or "", (meta.get("claim_section", "") or "").rstrip(".")
        context = meta.get("claim_context", "") or ""
        claim = Query(rec["claim"], title, section, context)
        part_text = supported_part(rec["claim"], rec["claim_tokens"], rec["non_supported_spans"])
        part = Query(part_text, title, section, context) if word_count(part_text) >= MIN_SUPPORTED_TOKENS else None
        near = {j for i in gold for j in (i - 1, i, i + 1)}
        others = [s for i, s in enumerate(rec.get("evidence", []))
                  if i not in near and not s.startswith(WICE_META_PREFIX) and len(s.split()) >= MIN_QUOTE_WORDS]
        quotes = tuple(page[i] for i in gold)
        items.append(QuoteItem(claim, quotes, HONEST[0]))
        if part is not None:
            items.append(QuoteItem(part, quotes, HONEST[1]))
        if others:
            items.append(QuoteItem(claim, (rng.choice(others),), UNRELATED[0]))
            if part is not None:
                items.append(QuoteItem(part, (rng.choice(others),), UNRELATED[1]))
    return items


def choose_cut(honest: np.ndarray, keep: float) -> float:
    """The highest cut that keeps at least ``keep`` of ``honest`` scores, rounded down to 4 decimals."""
    ordered = np.sort(honest)
    index = max(0, min(len(ordered) - 1, int(math.floor((1.0 - keep) * len(ordered)))))
    while index > 0 and (ordered >= ordered[index]).mean() < keep:
        index -= 1
    return math.floor(float(ordered[index]) * 10_000) / 10_000


def shares(scores: np.ndarray, kinds: np.ndarray, cut: float) -> dict[str, float]:
    """The share of each kind's quotes at or above ``cut``, honest and unrelated together too."""
    out = {kind: round(float((scores[kinds == kind] >= cut).mean()), 4) for kind in (*HONEST, *UNRELATED)
           if (kinds == kind).any()}
    out["honest_kept"] = round(float((scores[np.isin(kinds, HONEST)] >= cut).mean()), 4)
    out["unrelated_passed"] = round(float((scores[np.isin(kinds, UNRELATED)] >= cut).mean()), 4)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=float, default=0.9, help="share of honest quotes the cut keeps")
    parser.add_argument("--claims", type=int, default=0, help="the first N claims only (0: all)")
    parser.add_argument("--batch", type=int, default=32)
    args = parser.parse_args()
    if not 0.0 < args.keep < 1.0:
        parser.error("--keep must lie between 0 and 1")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = load_config()
    records = list(read_jsonl(config.data_dir / WICE_TRAIN))
    if args.claims:
        records = records[: args.claims]
    items = quote_items(records)
    verifier = Verifier.from_config(config)
    started = time.monotonic()
    scores: list[float] = []
    for start in range(0, len(items), args.batch):
        batch = items[start : start + args.batch]
        scores += score_quotes(verifier, [(item.query, item.quotes) for item in batch])
        log.info("%d/%d quotes scored, %.0f s", len(scores), len(items), time.monotonic() - started)
    score, kinds = np.array(scores), np.array([item.kind for item in items])
    cut = choose_cut(score[np.isin(kinds, HONEST)], args.keep)
    print(json.dumps({
        "train_claims": len(records), "quotes": {kind: int((kinds == kind).sum()) for kind in (*HONEST, *UNRELATED)},
        "keep": args.keep, "quote_cut": cut, "at_cut": shares(score, kinds, cut),
        "other_cuts": {f"{c:g}": shares(score, kinds, c) for c in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)},
        "median": {kind: round(float(np.median(score[kinds == kind])), 4) for kind in (*HONEST, *UNRELATED)
                   if (kinds == kind).any()},
        "seconds": round(time.monotonic() - started, 1),
    }, indent=2))


if __name__ == "__main__":
    main()

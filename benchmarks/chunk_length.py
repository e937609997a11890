"""Choosing the chunk length on train data: each chunk model judged on the claims held out of its
training, with what each pair costs.

Models trained with ``side train verifier --chunks --chunk-words N --combiner-holdout SHARE``
never saw the WiCE train and SciFact train claims of the held-out share, so those claims' chunk
pairs (:func:`side.training.chunked.wice_chunks` and :func:`~side.training.chunked.scifact_chunks`
at the model's own ``chunk_words``) are train data no model has fitted. For each ``--model``:

* **WiCE, S against the rest**: AUROC of P(SUPPORTS) for the supported pairs (the sub-claim
  without its unsupported words, against its gold chunk) against the partial (the whole
  sub-claim against the same chunk) and the not-supported (a chunk of the page without gold);
* **WiCE, S against P**: the twins alone, the missing-detail case;
* **SciFact, S against the rest**;
* **cost**: milliseconds of cross-encoder time per pair on this CPU, and tokens per pair.

Each model is measured on its own held-out pairs (the chunk lengths differ); the claims are the
same for every model trained with the same share.

    .venv/bin/python benchmarks/chunk_length.py --model DIR [--model DIR ...]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_scifact_claims, load_wice
from side.evaluation.verify import auroc
from side.training.chunked import GROUP_BASE, SCIFACT_GROUP_BASE, scifact_chunks, wice_chunks
from side.training.holdout import held_out, scifact_key, wice_key
from side.training.trainset import SCIFACT_TRAIN, WICE_TRAIN, Example
from side.verify.crossencoder import SUPPORTS, Pair
from side.verify.verifier import Verifier


def held_out_pairs(data: Path, words: int, share: float) -> tuple[list[Example], list[Example]]:
    """The WiCE and SciFact chunk pairs of the claims held out of training at ``share``."""
    claims = load_wice(data / WICE_TRAIN)
    wice = [ex for ex in wice_chunks(data, words) if held_out(wice_key(claims[ex.group - GROUP_BASE].id), share)]
    kept = {c.id for c in load_scifact_claims(data / SCIFACT_TRAIN) if held_out(scifact_key(c.id), share)}
    scifact = [ex for ex in scifact_chunks(data, words) if ex.group - SCIFACT_GROUP_BASE in kept]
    return wice, scifact


def supports(verifier: Verifier, examples: list[Example]) -> tuple[np.ndarray, float, float]:
    """P(SUPPORTS) per pair, CPU milliseconds per pair, mean tokens per pair (after truncation)."""
    pairs = [Pair(ex.title, ex.context, ex.passage) for ex in examples]
    cross = verifier.cross_encoder
    started = time.process_time()
    probs = cross.predict(pairs, batch_size=verifier.batch_size)
    ms = (time.process_time() - started) * 1000 / max(1, len(pairs))
    tokens = float(np.mean([len(ids) for ids, _ in cross.pairs.encode(pairs)]))
    return probs[:, SUPPORTS], ms, tokens


def figures(verifier: Verifier, data: Path) -> dict[str, float]:
    meta = verifier.cross_encoder.meta
    share = float(meta.get("combiner_holdout", 0.0))
    if not share or meta.get("premise") != "chunk":
        raise SystemExit("chunk_length.py: a model trained with --chunks --combiner-holdout is needed")
    words = int(meta["chunk_words"])
    wice, scifact = held_out_pairs(data, words, share)
    out: dict[str, float] = {"chunk_words": words, "max_length": int(meta["max_length"]),
                             "wice_pairs": len(wice), "scifact_pairs": len(scifact)}
    p, ms, tokens = supports(verifier, wice + scifact)
    pw, ps = p[: len(wice)], p[len(wice):]
    label = np.array([ex.label for ex in wice])
    out["wice_s_vs_rest_auroc"] = auroc(label == "S", pw)
    twins = label != "N"
    out["wice_s_vs_p_auroc"] = auroc(label[twins] == "S", pw[twins])
    out["scifact_s_vs_rest_auroc"] = auroc(np.array([ex.label == "S" for ex in scifact]), ps)
    out["ms_per_pair"], out["tokens_per_pair"] = ms, tokens
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, action="append", required=True,
                        help="a chunk model directory trained with --combiner-holdout (repeatable)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    config = load_config()
    rows = {str(m): figures(Verifier.from_config(config, m), Path(config.data_dir)) for m in args.model}
    keys = list(next(iter(rows.values())))
    print("| figure | " + " | ".join(rows) + " |\n|---|" + "---|" * len(rows))
    for key in keys:
        print(f"| {key} | " + " | ".join(f"{r[key]:.3f}" if isinstance(r[key], float) else str(r[key])
                                          for r in rows.values()) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

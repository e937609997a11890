"""Side beside the WiCE authors' published models, on the same WiCE claim dev claims, in one run.

The verifier's WiCE targets (AUROC(not supported) >= 0.92, AUROC(not fully supported) >= 0.85,
precision at 15% recall >= 0.85) are easier to weigh next to what the dataset's authors reached.
Their repository (``ryokamoi/wice``, MIT) publishes the scores of two T5-3B models (2.8B
parameters, about 125 times Side's 22M cross-encoder) on every row of WiCE's **oracle retrieval**
dev file, which is in the shared data (``wice/oracle_chunks_claim_dev.jsonl``: each claim's gold
sentences plus random sentences of the same page, about three chunks per claim; a claim's score
is the maximum over its chunks):

* ``t5-3b-anli``: T5-3B fine-tuned on ANLI only (no WiCE data, like Side);
* ``t5-3b-anli-wice``: the same, then fine-tuned on WiCE's claim-level train split, which is not
  on this machine (see ``wice/SOURCE.md``).

Their scores are read, not recomputed, from a checkout of that repository (measured with commit ``ddeb6c1``) given with
``--published`` (the ``code_and_resources/model_outputs/entailment_classification/oracle_chunks/claim``
directory; each ``retrieval=oracle,entailment=NAME/dev.entailment_score.txt`` holds one score per
row of the oracle file, in its order). Nothing of theirs is stored here. Side is scored in the
same run two ways: on the same oracle chunks (max over a claim's chunks, as the authors score
theirs), and on the whole cited page (what production reads and ``side eval verify wice``
reports). Figures on the oracle file must be reported as "oracle retrieval", not as WiCE.

The last column is the three verdict levels' macro-F1 (the levels' target is 0.65) of two cuts
on each score, chosen on four fifths of dev and scored on the fifth, then chosen on all of dev
(in-sample): the published models give a score, not levels, so this is the common rule.

A second table gives each of the combiner's signals alone as a score, in both settings: which
signals carry Side's verdict on WiCE, and which of them the rest of a whole page lifts.

A bootstrap over claims (``--bootstrap``, seed 13) gives a 95% interval for each figure: 349
claims, 43 of them not supported, leave a few hundredths of spread.

    .venv/bin/python benchmarks/wice_published.py --published DIR [--model DIR] [--limit N]
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import WICE_META_PREFIX, WiceClaim, load_wice, read_jsonl
from side.evaluation.verify import (
    cut_levels,
    failure_metrics,
    level_metrics,
    wice_query,
    wice_sentences,
)
from side.training.calibration import choose_cuts
from side.verify.verifier import FEATURES, Verifier

log = logging.getLogger("benchmarks.wice_published")

ORACLE_FILE = "wice/oracle_chunks_claim_dev.jsonl"
CLAIM_FILE = "wice/claim_dev.jsonl"
METRICS = ("auroc_not_supported", "auroc_not_fully_supported", "precision_at_15_recall")
TARGETS = {"auroc_not_supported": 0.92, "auroc_not_fully_supported": 0.85, "precision_at_15_recall": 0.85}


def published_scores(directory: Path, rows: list[dict], ids: list[str]) -> dict[str, np.ndarray]:
    """Per published model: its claim score (max over the claim's oracle chunks), in ``ids``' order."""
    out: dict[str, np.ndarray] = {}
    for path in sorted(directory.glob("retrieval=oracle,entailment=*/dev.entailment_score.txt")):
        scores = [float(line) for line in path.read_text().split()]
        if len(scores) != len(rows):
            raise SystemExit(f"{path}: {len(scores)} scores for {len(rows)} oracle rows; not the dev file's outputs")
        best = best_chunks(rows, scores)
        out[path.parent.name.split("entailment=", 1)[1]] = np.array([scores[best[i]] for i in ids])
    if not out:
        raise SystemExit(f"{directory}: no retrieval=oracle,entailment=*/dev.entailment_score.txt in it")
    return out


def best_chunks(rows: list[dict], scores: Sequence[float]) -> dict[str, int]:
    """Per claim id, the row of its best-scored chunk: the authors' rule for the oracle file."""
    best: dict[str, int] = {}
    for n, (row, score) in enumerate(zip(rows, scores, strict=True)):
        key = row["meta"]["id"]
        if key not in best or score > scores[best[key]]:
            best[key] = n
    return best


def side_scores(verifier: Verifier, claims: list[WiceClaim], rows: list[dict]) -> dict[str, np.ndarray]:
    """Side's support score and each combiner signal (one column per :data:`FEATURES`, then the
    score) on the oracle chunks (the best-scored chunk of each claim) and on the whole page."""
    by_id = {c.id: c for c in claims}
    chunk_rows = [r for r in rows if r["meta"]["id"] in by_id]
    pairs = [(wice_query(by_id[r["meta"]["id"]]), [s.removeprefix(WICE_META_PREFIX) for s in r["evidence"]])
             for r in chunk_rows]
    chunk = _signals(verifier, pairs, "oracle chunks")
    page = _signals(verifier, [(wice_query(c), wice_sentences(c)) for c in claims], "whole pages")
    best = best_chunks(chunk_rows, chunk[:, -1])
    return {"Side, oracle chunks": chunk[[best[c.id] for c in claims]], "Side, whole page": page}


def _signals(verifier: Verifier, pairs: list, what: str) -> np.ndarray:
    rows: list[list[float]] = []
    for start in range(0, len(pairs), 16):
        for item in verifier.run(pairs[start : start + 16]):
            signals = item.decided.signals
            rows.append([signals.get(f, np.nan) for f in FEATURES] + [item.decided.score])
        log.info("%s: %d/%d", what, len(rows), len(pairs))
    return np.array(rows, dtype=np.float64)


def signal_table(labels: np.ndarray, side: dict[str, np.ndarray]) -> None:
    """Each combiner signal alone, as a score (higher = better supported), in both settings: which
    signals carry the verdict, and which of them the whole page's other sentences lift."""
    print(f"\n{'signal alone (Side)':22}" + "".join(f"{f'{m} oracle / page':>40}" for m in METRICS[:2]))
    for j, name in enumerate((*FEATURES, "score")):
        cells = []
        for m in METRICS[:2]:
            pair = []
            for matrix in side.values():
                column = matrix[:, j]
                keep = np.isfinite(column)
                pair.append(failure_metrics(list(labels[keep]), column[keep])[m])
            cells.append(f"{pair[0]:.3f} / {pair[1]:.3f}")
        print(f"{name:22}" + "".join(f"{c:>40}" for c in cells))


def bootstrap(labels: np.ndarray, score: np.ndarray, n: int, seed: int = 13) -> dict[str, tuple[float, float]]:
    """95% interval of each of :data:`METRICS` over claims resampled with replacement (one
    resample serves all three)."""
    rng = np.random.default_rng(seed)
    values: dict[str, list[float]] = {m: [] for m in METRICS}
    for _ in range(n):
        pick = rng.integers(0, len(labels), len(labels))
        for m, value in failure_metrics(list(labels[pick]), score[pick]).items():
            if m in values and np.isfinite(value):
                values[m].append(value)
    return {m: (float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))) for m, v in values.items()}


def level_bounds(labels: np.ndarray, score: np.ndarray, folds: int = 5) -> tuple[float, float]:
    """Three-level macro-F1 of two cuts on the score: cuts chosen on four fifths of dev and applied
    to the fifth (stratified, seed 13), and cuts chosen on all of dev (in-sample, an upper bound).

    The published models give one score per claim and no levels, so two cuts are the fairest
    common rule; neither figure is a quality figure for Side, whose cuts come from train data.
    """
    from sklearn.model_selection import StratifiedKFold

    predicted = np.empty(len(labels), dtype=object)
    for train, test in StratifiedKFold(folds, shuffle=True, random_state=13).split(score, labels):
        high, low, _ = choose_cuts(score[train], list(labels[train]))
        predicted[test] = cut_levels(score[test], high, low)
    cv = level_metrics(list(labels), [str(p) for p in predicted])["macro_f1"]
    return cv, choose_cuts(score, list(labels))[2]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--published", type=Path, required=True,
                        help="the authors' oracle_chunks/claim model-output directory (a ryokamoi/wice checkout)")
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    parser.add_argument("--limit", type=int, help="only the first N dev claims (a quick look)")
    parser.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals (0: none)")
    args = parser.parse_args(argv)
    if not args.published.is_dir():
        parser.error(f"--published {args.published}: not a directory")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    config = load_config()
    data = Path(config.data_dir)
    claims = load_wice(data / CLAIM_FILE)[: args.limit]
    rows = list(read_jsonl(data / ORACLE_FILE))
    scores = published_scores(args.published, rows, [c.id for c in claims])
    side = side_scores(Verifier.from_config(config, args.model), claims, rows)
    scores |= {name: matrix[:, -1] for name, matrix in side.items()}
    labels = np.array([c.label for c in claims])
    print(f"WiCE claim dev, {len(claims)} claims ({int((labels == 'not_supported').sum())} not supported, "
          f"{int((labels == 'supported').sum())} supported); published models read from {args.published}")
    print(f"{'scorer':34}" + "".join(f"{m:>34}" for m in METRICS) + f"{'levels macro-F1 CV / in-sample':>34}")
    print(f"{'target':34}" + "".join(f"{TARGETS[m]:>34.2f}" for m in METRICS) + f"{0.65:>34.2f}")
    for name, score in scores.items():
        figures = failure_metrics(list(labels), score)
        intervals = bootstrap(labels, score, args.bootstrap) if args.bootstrap else {}
        cells = [f"{figures[m]:.3f}" + (" [{:.3f}, {:.3f}]".format(*intervals[m]) if m in intervals else "")
                 for m in METRICS]
        cv, in_sample = level_bounds(labels, score) if len(labels) >= 25 else (float("nan"), float("nan"))
        print(f"{name:34}" + "".join(f"{c:>34}" for c in cells) + f"{f'{cv:.3f} / {in_sample:.3f}':>34}")
    signal_table(labels, side)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Verdict levels from sub-claims: does splitting a claim and verifying each part decide the level better?

WiCE's annotators call a claim partially supported when its page backs some parts and not
others. :func:`side.verify.decompose.split_claim` cuts a claim into standalone sub-claims; each
is verified against the same page (its sentence embeddings computed once) and the level is read
off the parts and the whole claim:

- ``whole``: the shipped rule, the whole claim's score and two cuts;
- ``parts, shipped cuts``: supported when the whole claim and every part reach the supported
  cut, not supported when neither the whole nor any part reaches the not-supported cut, else
  partially supported (no new parameter: the shipped cuts were chosen on sub-claims);
- ``parts, cuts re-chosen``: the same rule, its two cuts chosen on the train construction;
- ``parts, min only``: supported from the weakest part alone (the whole claim not guarding).

Everything is chosen on train: the three-level construction of
``side.training.calibration.level_items`` plus the compound claims rebuilt by
``joined_level_items``. WiCE claim dev is printed beside it, for information. Signals of every
claim and part are cached under ``var/calibration``, so a second run takes seconds.

    nice -n 10 .venv/bin/python benchmarks/subclaims.py [--model DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np

from side.config import load_config
from side.data import load_wice
from side.evaluation.verify import LEVELS, level_metrics, wice_query, wice_sentences
from side.training.calibration import choose_cuts, joined_level_items, level_items
from side.verify.decompose import split_claim
from side.verify.levels import LevelThresholds, VerdictLevel, part_levels
from side.verify.verifier import FEATURES, Combiner, Query, Verifier


def _parts(items: Sequence[tuple[Query, list[str]]]) -> tuple[list[tuple[Query, list[str]]], list[list[int]]]:
    """The sub-claim items of every item that splits, and for each item the rows of its parts."""
    flat: list[tuple[Query, list[str]]] = []
    rows: list[list[int]] = []
    for query, sentences in items:
        subs = split_claim(query.claim)
        if len(subs) < 2:
            rows.append([])
            continue
        rows.append(list(range(len(flat), len(flat) + len(subs))))
        flat += [(Query(s, query.title, query.section, query.context), sentences) for s in subs]
    return flat, rows


class ItemCache:
    """The verifier's signals per (claim, sentences), appended to a JSON-lines file batch by batch,
    so a run that is stopped keeps its work and a changed split only verifies the changed parts."""

    def __init__(self, verifier: Verifier, path: Path) -> None:
        self.verifier = verifier
        self.path = path
        digest = hashlib.sha256()
        weights = Path(verifier.cross_encoder.model_dir) / "verifier.safetensors"
        digest.update(weights.read_bytes() if weights.is_file() else str(weights).encode())
        digest.update(str(verifier.cross_encoder.precision).encode())
        digest.update(json.dumps(verifier.combiner.coef if verifier.combiner else []).encode())
        self.model = digest.hexdigest()[:16]
        self.rows: dict[str, tuple[list[float], str]] = {}
        if path.is_file():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                self.rows[row["key"]] = (row["features"], row["reason"])

    def key(self, query: Query, sentences: list[str]) -> str:
        text = json.dumps([self.model, query.claim, query.title, query.section, query.context, sentences])
        return hashlib.sha256(text.encode()).hexdigest()[:24]

    def signals(self, pairs: list[tuple[Query, list[str]]], batch: int = 16) -> tuple[np.ndarray, list[str]]:
        """Feature rows and cannot-check reasons of ``pairs``, verifying only those not cached."""
        from tqdm import tqdm

        keys = [self.key(q, s) for q, s in pairs]
        todo = list(dict.fromkeys(i for i, k in enumerate(keys) if k not in self.rows))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for start in tqdm(range(0, len(todo), batch), desc="verifier signals", unit="batch"):
            chunk = todo[start : start + batch]
            with self.path.open("a") as out:
                for i, item in zip(chunk, self.verifier.run([pairs[i] for i in chunk]), strict=True):
                    verdict = item.decided
                    reason = verdict.reason if verdict.level is VerdictLevel.CANNOT_CHECK else ""
                    self.rows[keys[i]] = ([verdict.signals.get(f, 0.0) for f in FEATURES], reason)
                    out.write(json.dumps({"key": keys[i], "features": self.rows[keys[i]][0], "reason": reason}) + "\n")
        return (np.array([self.rows[k][0] for k in keys], dtype=np.float64).reshape(-1, len(FEATURES)),
                [self.rows[k][1] for k in keys])


def _scores(combiner: Combiner, features: np.ndarray) -> np.ndarray:
    return np.array([combiner.score(dict(zip(FEATURES, row, strict=True))) for row in features])


def _levels(whole: np.ndarray, parts: list[np.ndarray], cuts: LevelThresholds, guard: bool = True) -> list[str]:
    return [part_levels(float(w), [float(x) for x in p], cuts, guard).value
            for w, p in zip(whole, parts, strict=True)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-first", action="store_true", help="verify the train items before WiCE dev")
    parser.add_argument("--train-only", action="store_true",
                        help="train items only (WiCE dev comes from `side eval verify wice --split-claims`)")
    parser.add_argument("--full-train", action="store_true",
                        help="verify the whole base construction too (about 1,200 items; needed to re-choose cuts)")
    parser.add_argument("--model", type=Path, help="verifier model directory (default: the shipped one)")
    args = parser.parse_args(argv)
    config = load_config()
    data = Path(config.data_dir)
    cache = Path(config.var_dir) / "calibration"
    verifier = Verifier.from_config(config, args.model)
    combiner = verifier.combiner
    assert combiner is not None, "the model has no combiner.json"
    store = ItemCache(verifier, cache / "subclaims-items.jsonl")

    base, joined = level_items(data), joined_level_items(data)
    if not args.full_train:  # only the base items a split can change (a few): minutes instead of half an hour
        base = [i for i in base if len(split_claim(i.query.claim)) > 1]
    train = base + joined
    claims = load_wice(data / "wice" / "claim_dev.jsonl")
    dev_pairs = [(wice_query(c), wice_sentences(c)) for c in claims]
    sources = {"train": [(i.query, list(i.sentences)) for i in train], "dev": dev_pairs}
    names = ["train"] if args.train_only else ["train", "dev"] if args.train_first else ["dev", "train"]
    sets = {}
    for name in names:
        pairs = sources[name]
        start = time.perf_counter()
        flat, rows = _parts(pairs)
        sub_score = _scores(combiner, store.signals(flat)[0])  # the parts first: they are what is new
        features, reasons = store.signals(pairs)
        took = time.perf_counter() - start
        keep = np.array([not r for r in reasons])
        sets[name] = (_scores(combiner, features), [sub_score[r] for r in rows], keep)
        print(f"{name}: {len(pairs)} claims, {sum(bool(r) for r in rows)} split into {len(flat)} parts "
              f"({(len(pairs) + len(flat)) / len(pairs):.2f} verifier passes per claim; {took:.0f} s this run)",
              flush=True)
    gold = {"train": [i.level.value for i in train], "dev": [c.label for c in claims]}

    train_score, train_parts, train_keep = sets["train"]
    tgold = [g for g, k in zip(gold["train"], train_keep, strict=True) if k]

    def fit(guard: bool) -> LevelThresholds:
        """The two cuts of the parts rule with the best train macro-F1 (grid over the shipped score's cuts)."""
        grid = np.unique(np.quantile(train_score[train_keep], np.linspace(0, 1, 81)))
        best = (-1.0, combiner.levels)
        for i, low in enumerate(grid):
            for high in grid[i:]:
                cuts = LevelThresholds(float(high), float(low), 0.0)
                predicted = _levels(train_score[train_keep], [p for p, k in zip(train_parts, train_keep, strict=True)
                                                              if k], cuts, guard)
                f1 = level_metrics(tgold, predicted)["macro_f1"]
                if f1 > best[0]:
                    best = (f1, cuts)
        return best[1]

    shipped = combiner.levels
    high, low, _ = choose_cuts(train_score[train_keep], tgold)
    rules = [
        ("whole (shipped)", lambda s, p: _levels(s, [np.array([])] * len(s), shipped)),
        ("whole, cuts re-chosen with joined", lambda s, p: _levels(s, [np.array([])] * len(s),
                                                                   LevelThresholds(high, low, 0.0))),
        ("parts, shipped cuts", lambda s, p: _levels(s, p, shipped)),
        ("parts, shipped cuts, no guard", lambda s, p: _levels(s, p, shipped, guard=False)),
    ]
    if not args.full_train:
        rules = rules[:1] + rules[2:]  # cuts are only re-chosen on the whole construction
    refit = fit(True) if args.full_train else None
    refit_noguard = fit(False) if args.full_train else None
    if refit is not None and refit_noguard is not None:
        rules += [(f"parts, cuts re-chosen ({refit.supported:.3f}/{refit.not_supported:.3f})",
                   lambda s, p: _levels(s, p, refit)),
                  (f"parts, no guard, re-chosen ({refit_noguard.supported:.3f}/{refit_noguard.not_supported:.3f})",
                   lambda s, p: _levels(s, p, refit_noguard, guard=False))]
    print(f"{'rule':48} {'train macro-F1':>15} {'WiCE dev macro-F1':>18}  dev confusion (rows S/P/N)")
    for name, rule in rules:
        out = []
        for split in names:
            score, parts, keep = sets[split]
            predicted = rule(score, parts)
            # cannot check stays cannot check, as in `side eval verify`
            predicted = [p if k else "cannot_check" for p, k in zip(predicted, keep, strict=True)]
            out.append(level_metrics(gold[split], predicted))
        by = dict(zip(names, out, strict=True))
        dev = by.get("dev")
        confusion = " ".join("-".join(str(dev["confusion"][g][p]) for p in LEVELS) for g in LEVELS) if dev else ""
        train_confusion = " ".join("-".join(str(by["train"]["confusion"][g][p]) for p in LEVELS) for g in LEVELS)
        print(f"{name:48} {by['train']['macro_f1']:15.3f} {dev['macro_f1'] if dev else float('nan'):18.3f}  "
              f"{confusion}  (train {train_confusion})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

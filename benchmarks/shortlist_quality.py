"""WiCE dev quality with the BM25 shortlist (the configured ``verifier.shortlist``) beside today's
settings (``shortlist`` 0: every sentence embedded), on the same claims in the same run.

The metrics are ``side eval verify wice``'s own (:mod:`side.evaluation.verify`): AUROC(not
supported), AUROC(not fully supported), precision at 15% recall, evidence R@5, levels macro-F1,
and the MiniLM max-cosine baseline (which reads only the shortlisted sentences' cosines). Both
verifiers share one sentence-embedding cache and a memo of cross-encoder outputs, so the second
costs only what the shortlist changes; the figures are those each setting alone gives. Written to
``--out`` (JSON) after every 8 claims, so a run cut short still leaves its first claims' figures.

    .venv/bin/python benchmarks/shortlist_quality.py [--limit 349] [--out shortlist_quality.json]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

log = logging.getLogger("benchmarks.shortlist_quality")


class MemoCrossEncoder:
    """The cross-encoder, each distinct pair scored once across both verifiers."""

    def __init__(self, inner) -> None:
        self.inner, self.rows = inner, {}

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def predict(self, pairs, batch_size: int = 32) -> np.ndarray:
        missing = list(dict.fromkeys(p for p in pairs if p not in self.rows))
        if missing:
            self.rows.update(zip(missing, self.inner.predict(missing, batch_size=batch_size), strict=True))
        return np.array([self.rows[p] for p in pairs], dtype=np.float32).reshape(len(pairs), 3)


def figures(claims, prepared) -> dict:
    from side.evaluation import verify as ev

    labels = [c.label for c in claims]
    support = np.array([p.decided.score for p in prepared])
    cosine = np.array([p.selection.max_cosine if p.selection else 0.0 for p in prepared])
    recall = [len(c.gold_sentences & set(ev.verifier_order(p)[:5])) / len(c.gold_sentences)
              for c, p in zip(claims, prepared, strict=True) if c.gold_sentences]
    levels = ev.level_report(labels, [p.decided.level.value for p in prepared], {}, {})
    return {"claims": len(claims), **ev.failure_metrics(labels, support), "evidence_r5": float(np.mean(recall)),
            "levels_macro_f1": levels["verifier"]["macro_f1"],
            "baseline_max_cosine": ev.failure_metrics(labels, cosine)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N WiCE dev claims")
    parser.add_argument("--out", type=Path, default=Path("shortlist_quality.json"), help="JSON figures")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from tqdm import tqdm

    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.verify import wice_query, wice_sentences
    from side.verify.verifier import Verifier

    config = load_config()
    path = config.data_dir / "wice" / "claim_dev.jsonl"
    if not path.is_file():
        raise SystemExit(f"no WiCE dev claims at {path} (set SIDE_DATA_DIR)")
    now = Verifier.from_config(config)
    today = Verifier(now.cross_encoder, now.encoder, now.combiner, now.k, now.batch_size, now.tagger, shortlist=0)
    now.embeddings = today.embeddings
    now.cross_encoder = today.cross_encoder = MemoCrossEncoder(now.cross_encoder)  # type: ignore[assignment]
    claims = load_wice(path)[: args.limit]
    runs: dict[str, list] = {"today (shortlist 0)": [], f"now (shortlist {now.shortlist})": []}
    for start in tqdm(range(0, len(claims), 8), desc="WiCE claims, 8 at a time", unit="batch"):
        items = [(wice_query(c), wice_sentences(c)) for c in claims[start : start + 8]]
        for verifier, prepared in zip((today, now), runs.values(), strict=True):
            prepared += verifier.run(items)
        done = claims[: start + len(items)]
        report = {name: figures(done, prepared) for name, prepared in runs.items()}
        first, second = runs.values()
        report["same_level"] = sum(a.decided.level is b.decided.level for a, b in zip(first, second, strict=True))
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"WiCE dev, {len(claims)} claims; verdicts at the same level: {report['same_level']}")
    print(f"{'setting':<22} {'AUROC(NS)':>9} {'AUROC(NFS)':>10} {'P@R15':>6} {'ev R@5':>7} {'levels F1':>9} "
          f"{'max-cos AUROC(NS)':>17}")
    for name in runs:
        m = report[name]
        print(f"{name:<22} {m['auroc_not_supported']:9.3f} {m['auroc_not_fully_supported']:10.3f} "
              f"{m['precision_at_15_recall']:6.3f} {m['evidence_r5']:7.3f} {m['levels_macro_f1']:9.3f} "
              f"{m['baseline_max_cosine']['auroc_not_supported']:17.3f}")


if __name__ == "__main__":
    main()

"""Sentence splitters: boundaries against sentences people's tools already split, and verdicts.

Side splits a cited page's paragraphs with Bling Fire (:func:`side.text.split_sentences`);
before, it used pysbd, ~20x slower per paragraph. This script measures both in one run (and
sentencex, Wikimedia's splitter, where it is installed):

- **boundaries**: sentences whose boundaries are known, joined four at a time with a space (as
  one paragraph of a page), split again; precision and recall of the boundaries found. Only a
  boundary after terminal punctuation counts as one to find (a page's heading or menu item
  joined to the next sentence has no mark a splitter could see); a boundary found there is not
  counted against it either (:mod:`side.evaluation.sentences`). Also: how many single sentences
  each splits. Sets: WiCE train's evidence (sentences of the web pages cited on Wikipedia;
  ``--set wice``) and SciFact's corpus (abstracts of papers; ``--set scifact``).
- **verdicts** (``--verdicts N``): the first N WiCE dev claims, each cited page's sentences
  joined back into paragraphs (consecutive sentences after terminal punctuation, at most four)
  and split by each splitter, then judged by the shipped verifier; AUROC of the support score
  for "not supported" and "not fully supported", and the levels' macro-F1, beside the figures on
  WiCE's own sentences.

    .venv/bin/python benchmarks/splitters.py [--set wice scifact] [--verdicts 349]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

Splitter = Callable[[str], list[str]]


def splitters() -> dict[str, Splitter]:
    """Each splitter on one paragraph: pysbd's own Segmenter (English, ``clean=False``, as Side
    ran it), and Side's :func:`side.text.split_sentences` (Bling Fire)."""
    import pysbd

    from side.text import split_sentences

    segmenter = pysbd.Segmenter(language="en", clean=False)

    def by_pysbd(paragraph: str) -> list[str]:
        return [s.strip() for s in segmenter.segment(paragraph) if s.strip()]

    chosen: dict[str, Splitter] = {"pysbd": by_pysbd, "side (Bling Fire)": split_sentences}
    try:  # Wikimedia's splitter, measured beside them where it is installed (pip install sentencex)
        import sentencex
    except ImportError:
        return chosen
    chosen["sentencex"] = lambda paragraph: [s.strip() for s in sentencex.segment("en", paragraph) if s.strip()]
    return chosen


def split_single(sentences: list[str], split: Splitter) -> float:
    """Share of single sentences a splitter cuts in more than one."""
    return sum(len(split(s)) > 1 for s in sentences) / max(len(sentences), 1)


def verdicts(data_dir: Path, limit: int, split_text: dict[str, Callable[[str], list[str]]]) -> dict[str, dict]:
    """The shipped verifier on WiCE dev claims, on WiCE's own sentences and on each splitter's."""
    import numpy as np
    from tqdm import tqdm

    from side.config import load_config
    from side.data import load_wice
    from side.evaluation.sentences import clean, joined_paragraphs
    from side.evaluation.verify import failure_metrics, level_metrics, wice_query, wice_sentences
    from side.verify.verifier import Verifier

    verifier = Verifier.from_config(load_config())
    claims = load_wice(data_dir / "wice" / "claim_dev.jsonl")[:limit]
    labels = [c.label for c in claims]
    pages = {"WiCE's sentences": [wice_sentences(c) for c in claims]}
    for name, split in split_text.items():
        pages[name] = [split(joined_paragraphs(clean(wice_sentences(c)))) for c in claims]
    out = {}
    for name, sentences in pages.items():
        prepared = []
        for start in tqdm(range(0, len(claims), 16), desc=name, unit="batch"):
            prepared += verifier.run([(wice_query(c), s) for c, s in
                                      zip(claims[start:start + 16], sentences[start:start + 16], strict=True)])
        support = np.array([p.decided.score for p in prepared])
        out[name] = {**failure_metrics(labels, support),
                     "levels_macro_f1": level_metrics(labels, [p.decided.level.value for p in prepared])["macro_f1"],
                     "sentences": sum(map(len, sentences))}
    return out


def main() -> None:
    from side.config import load_config
    from side.evaluation.sentences import boundaries, scifact_abstracts, wice_evidence
    from side.text import split_sentences

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", nargs="*", choices=["wice", "scifact"], default=["wice", "scifact"],
                        help="sentence sets for the boundaries (default both)")
    parser.add_argument("--verdicts", type=int, default=0, metavar="N",
                        help="also judge the first N WiCE dev claims on each splitter's sentences (349: all)")
    args = parser.parse_args()
    data_dir = Path(load_config().data_dir)
    chosen = splitters()
    for name in args.set:
        if name == "wice":
            sentences = wice_evidence(data_dir / "wice" / "non_supported_tokens_train.jsonl")
            groups = [sentences[i:i + 4] for i in range(0, len(sentences) - 3, 4)]
            title = f"WiCE train evidence: {len(sentences)} sentences, {len(groups)} paragraphs of four"
        else:
            abstracts = scifact_abstracts(data_dir / "scifact" / "corpus.jsonl")
            sentences = [s for a in abstracts for s in a]
            groups = [a for a in abstracts if a]
            title = f"SciFact corpus: {len(sentences)} sentences, {len(groups)} abstracts as one paragraph each"
        print(title)
        for label, split in chosen.items():
            started = time.process_time()
            b = boundaries(groups, split)
            ms = 1000 * (time.process_time() - started) / max(len(groups), 1)
            print(f"  {label:18s} boundaries P {b.precision:.3f} R {b.recall:.3f} F1 {b.f1:.3f}; "
                  f"single sentences split {split_single(sentences, split):.1%}; {ms:.3f} ms per paragraph")
    if args.verdicts:
        by_pysbd = chosen["pysbd"]

        def pysbd_text(text: str) -> list[str]:
            return [s for line in text.split("\n") for s in by_pysbd(line)]

        results = verdicts(data_dir, args.verdicts, {"pysbd": pysbd_text, "side (Bling Fire)": split_sentences})
        print(f"WiCE dev, first {args.verdicts} claims, the shipped verifier:")
        for name, r in results.items():
            print(f"  {name:18s} AUROC(not supported) {r['auroc_not_supported']:.3f}  AUROC(not fully supported) "
                  f"{r['auroc_not_fully_supported']:.3f}  levels macro-F1 {r['levels_macro_f1']:.3f}  "
                  f"({r['sentences']} sentences)")


if __name__ == "__main__":
    main()

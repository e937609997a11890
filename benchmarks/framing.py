"""Choose how much of a claim a framed sentence must hold (``side.verify.framing.RESTATES``), on WiCE
train only.

A framed restatement ("it is false that X", "critics claim that X", an instruction repeating X) is
blanked before the verifier reads a page. The share of the claim's content words such a sentence
must hold trades two errors: too high, and a restatement in other words slips through; too low,
and a real page's supporting sentence that happens to hold a cue is blanked. On WiCE train's
claims and their supported parts (the train construction of the level cuts), this prints for
each share of the grid:

* the share of the real train pages that have a sentence taken as framed (support wrongly blanked);
* the share of wrapped train pages caught (the train wordings of
  :data:`side.evaluation.framing.TRAIN_WRAPS`, with the claim in full and loosened: every third
  content word left out);

and the share chosen (:func:`side.evaluation.framing.choose_restates`): the highest that still
catches 98% of the wrapped pages with at most 2% of real pages framed. No model runs, and no dev
data is read (``side eval framing`` reports dev, with other wordings)::

    python benchmarks/framing.py [--json]
"""

from __future__ import annotations

import argparse
import json

from side.config import load_config
from side.evaluation.framing import choose_restates, train_backed
from side.verify.framing import RESTATES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args()
    report = choose_restates(train_backed(load_config().data_dir))
    report["shipped"] = RESTATES
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"WiCE train: {report['claims']} claims and supported parts, {report['wrapped']} wrapped pages")
    print(f"{'share':>6} {'real pages framed':>18} {'wrapped caught':>15}")
    for row in report["grid"]:
        print(f"{row['restates']:>6.2f} {row['real_pages_framed']:>18.4f} {row['wrapped_caught']:>15.4f}")
    print(f"chosen: {report['chosen']} (shipped: {report['shipped']})")


if __name__ == "__main__":
    main()

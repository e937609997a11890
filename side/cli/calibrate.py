"""``side calibrate --from FILE | --from-store``: re-choose the flag and report cuts from reviewed results.

The file is a ``side feedback export`` (see :mod:`side.training.feedback`). Reading the results
store needs the service stack, which the core library never imports: ``--from-store`` asks the
exporter registered under the ``side.review_exports`` entry point (``service.cli``) to write the
store's reviews to a file, then calibrates from that file, so the outcome can be reproduced from
the file alone.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import shutil
from pathlib import Path
from typing import Any

from side.cli.checks import at_least, folder_to_write
from side.cli.jsonout import json_text
from side.config import Config
from side.errors import InputError
from side.extras import install_command

__all__ = ["register", "add_arguments", "calibrate_file", "run_calibrate"]

log = logging.getLogger(__name__)


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "calibrate", help="re-choose the flag and report cuts from reviewed results",
        description="Re-choose the verifier's flag (supported) cut and the talk-page report's cut from "
        "patrollers' decisions: a feedback export (--from FILE, written by side feedback export) or "
        "the results store's reviews (--from-store, exported to a file first, so the outcome can be reproduced "
        "from that file). Accepted and 'suggestion-wrong' mean the cited source did not "
        "support the claim, 'source-is-fine' that it did; other reasons are left out. The flag cut maximises "
        "F0.5 (precision first) over the reviews, the report cut keeps 90% precision. Prints precision and "
        "recall before and after as JSON. Below the minimum number of reviews nothing changes. Nothing is "
        "written without --out DIR (a copy of the model directory with the new combiner.json) or --write "
        "(replace the model directory's own combiner.json).",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="source", type=Path, metavar="FILE",
                        help="feedback export (JSON Lines written by side feedback export)")
    source.add_argument("--from-store", action="store_true",
                        help="the results store's reviews (service.database_url), exported first to --export")
    parser.add_argument("--export", type=Path, help="with --from-store: where the export goes "
                        "(default: VAR_DIR/feedback.jsonl)")
    parser.add_argument("--wiki", help="with --from-store: only this wiki's reviews (e.g. enwiki)")
    add_arguments(parser)
    parser.set_defaults(func=run_calibrate)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options ``side calibrate`` and ``side-feedback calibrate`` share."""
    parser.add_argument("--model", type=Path, help="model directory whose cuts to start from "
                        "(default: verifier.model_dir, else the shipped model)")
    parser.add_argument("--out", type=Path, metavar="DIR",
                        help="write a copy of the model directory here, with the new cuts in its combiner.json")
    parser.add_argument("--write", action="store_true",
                        help="replace the model directory's own combiner.json (the shipped one by default)")
    parser.add_argument("--min-reviews", type=int,
                        help="labelled reviews needed to change anything (default: verifier.min_reviews)")


def _model_dir(args: argparse.Namespace, config: Config) -> Path:
    from side.verify.crossencoder import DEFAULT_MODEL_DIR

    return Path(args.model or config.verifier.model_dir or DEFAULT_MODEL_DIR)


def _target(args: argparse.Namespace, model_dir: Path) -> Path | None:
    """Where the new combiner.json goes (None: nowhere); refuses to replace the model's own silently."""
    if args.out is None:
        return model_dir if args.write else None
    if args.out.resolve() == model_dir.resolve() and not args.write:
        raise InputError(f"--out {args.out} is the model directory itself: add --write to replace its combiner.json")
    folder_to_write(args.out)
    return args.out


def _copy_model(model_dir: Path, out: Path) -> None:
    """The model's files into ``out`` (those already there are kept), so ``out`` loads as a model."""
    out.mkdir(parents=True, exist_ok=True)
    for path in model_dir.iterdir():
        if path.is_file() and not (out / path.name).exists():
            shutil.copy2(path, out / path.name)


def calibrate_file(path: Path, args: argparse.Namespace, config: Config) -> dict[str, Any]:
    """Recalibrate from the export at ``path``; write the combiner where ``args`` says. Returns the report."""
    from side.training.feedback import read_feedback
    from side.training.recalibrate import recalibrate
    from side.verify.verifier import COMBINER_FILE, Combiner

    at_least(1, min_reviews=args.min_reviews)
    model_dir = _model_dir(args, config)
    combiner = Combiner.load(model_dir / COMBINER_FILE)
    if combiner is None:
        raise InputError(f"no usable {COMBINER_FILE} in {model_dir}")
    target = _target(args, model_dir)
    records = read_feedback(path)
    minimum = config.verifier.min_reviews if args.min_reviews is None else args.min_reviews
    outcome = recalibrate(records, combiner.levels, minimum)
    report: dict[str, Any] = {"feedback": str(path), "model": str(model_dir), **outcome.to_dict(), "written": None}
    if outcome.changed and target is not None:
        after = outcome.after
        combiner.flag_threshold = after.supported
        combiner.not_supported_threshold = after.not_supported
        combiner.report_threshold = after.report
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        combiner.info["feedback_calibration"] = {"file_sha256": digest, "labelled": outcome.labelled,
                                                 "before": report["before"], "after": report["after"]}
        if target != model_dir:
            _copy_model(model_dir, target)
        combiner.save(target / COMBINER_FILE)
        report["written"] = str(target / COMBINER_FILE)
        log.info("new cuts written to %s", report["written"])
    return report


def review_exporter() -> Any:
    """The store's exporter, ``export(config, path, wiki) -> count``, from the ``side.review_exports``
    entry point; a clear error where the service stack is not installed."""
    from importlib.metadata import entry_points

    points = [p for p in entry_points(group="side.review_exports") if p.name == "store"]
    if not points:
        raise InputError("--from-store needs the results store (the service package): "
                         f"{install_command('service')}, or export the reviews and use --from FILE")
    return points[0].load()


def run_calibrate(args: argparse.Namespace, config: Config) -> int:
    path = args.source
    if args.from_store:
        path = args.export or Path(config.var_dir) / "feedback.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        count = review_exporter()(config, path, args.wiki)
        log.info("%d reviewed results exported to %s", count, path)
    print(json_text(calibrate_file(path, args, config), indent=2))
    return 0

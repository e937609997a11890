"""``side feedback``: the service's commands offered by the ``side`` command line as a plugin.

The core library never imports the results store, so these register through the
``side.commands`` entry point (pyproject.toml) and import the store only when they run:

* ``side feedback export [--out FILE] [--wiki W]`` writes every reviewed result (its latest
  decision) in the versioned format of :mod:`side.training.feedback`;
* ``side feedback calibrate`` is ``side calibrate --from-store``: export, then re-choose the cuts.

:func:`export_reviews` is the ``side.review_exports`` entry point ``side calibrate --from-store``
calls. ``side-feedback`` (:mod:`service.feedback`) is the same pair as its own console script.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from side.config import Config

__all__ = ["register", "export_reviews"]


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``side feedback`` to the ``side`` command line."""
    from side.cli.calibrate import add_arguments

    parser = sub.add_parser("feedback", help="patrollers' reviews out of the results store",
                            description="Patrollers' decisions out of the results store (service.database_url): "
                            "export them as a versioned feedback file, or re-choose the verifier's cuts from them.")
    commands = parser.add_subparsers(dest="feedback_command", metavar="COMMAND", required=True)
    export = commands.add_parser("export", help="write reviewed results as a feedback export (JSON Lines)")
    export.add_argument("--out", type=Path, default=Path("-"), help="file to write (default: standard output)")
    export.add_argument("--wiki", help="only this wiki's reviews (e.g. enwiki)")
    export.set_defaults(func=_run_export)
    calibrate = commands.add_parser("calibrate", help="export, then re-choose the cuts (side calibrate --from-store)")
    calibrate.add_argument("--export", type=Path, help="where the export goes (default: VAR_DIR/feedback.jsonl)")
    calibrate.add_argument("--wiki", help="only this wiki's reviews")
    add_arguments(calibrate)
    calibrate.set_defaults(func=_run_calibrate, source=None, from_store=True)


def export_reviews(config: Config, path: Path, wiki: str | None = None) -> int:
    """Write the configured store's reviewed results to ``path``; returns how many."""
    from service.feedback import export_feedback
    from service.store import Store

    store = Store.open(config.database_url)
    try:
        return export_feedback(store, path, wiki)
    finally:
        store.close()


def _run_export(args: argparse.Namespace, config: Config) -> int:
    from service.feedback import run_export
    from service.store import Store

    store = Store.open(config.database_url)
    try:
        return run_export(args, store)
    finally:
        store.close()


def _run_calibrate(args: argparse.Namespace, config: Config) -> int:
    from side.cli.calibrate import run_calibrate

    return run_calibrate(args, config)

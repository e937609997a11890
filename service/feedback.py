"""``side-feedback`` (also ``side feedback``, see :mod:`service.cli`): patrollers' decisions out of
the results store, and back into the model.

The core library (``side``) never imports the service stack, so the commands that read the
store live here, as their own console script, and hand over a file:

* ``side-feedback export [--out FILE]`` writes every reviewed result (its latest decision) in
  the versioned format of :mod:`side.training.feedback`;
* ``side-feedback calibrate`` exports to ``--export FILE`` (default ``var/feedback.jsonl``) and runs
  ``side calibrate --from`` that file, so the outcome can be reproduced from the file alone.

``side train verifier --feedback FILE`` reads the same export for training pairs.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from service.store import Feedback, Store, StoredResult, iso
from side.config import Config, load_config
from side.errors import SideError
from side.training.feedback import FeedbackRecord, ReviewedSentence, ReviewedSuggestion, write_feedback

__all__ = ["feedback_record", "export_feedback", "run_export", "build_parser", "main"]

log = logging.getLogger(__name__)


def _suggestion(result: StoredResult, decision: Feedback) -> ReviewedSuggestion | None:
    """The suggestion the decision was about: the one it names, else the first one shown."""
    chosen = next((s for s in result.suggestions if s.url == decision.suggestion_url), None)
    chosen = chosen or (result.suggestions[0] if result.suggestions else None)
    if chosen is None:
        return ReviewedSuggestion(url=decision.suggestion_url) if decision.suggestion_url else None
    return ReviewedSuggestion(url=chosen.url, title=chosen.title, score=chosen.score,
                              evidence=chosen.evidence.text if chosen.evidence else "")


def feedback_record(result: StoredResult, decision: Feedback) -> FeedbackRecord:
    """One reviewed result as an export record (the reviewer's name is not exported)."""
    claim = result.claim
    return FeedbackRecord(
        claim=claim.text, context=claim.left_context, article_title=claim.article_title,
        section=claim.section_path, cited_url=result.citation_url, score=result.score, level=str(result.level),
        flagged=result.flagged,
        evidence=tuple(ReviewedSentence(e.text, e.score, e.sentence_index) for e in result.evidence),
        action=decision.action, reason=str(decision.reason), suggestion=_suggestion(result, decision),
        comment=decision.comment, wiki=result.wiki, revision=result.revision, result_id=result.id,
        checked_at=iso(result.created_at) or "", reviewed_at=iso(decision.created_at) or "")


def export_feedback(store: Store, path: Path, wiki: str | None = None) -> int:
    """Write the store's reviewed results to ``path``; returns how many."""
    return write_feedback([feedback_record(r, d) for r, d in store.reviewed(wiki)], path)


def build_parser() -> argparse.ArgumentParser:
    from side.cli.calibrate import add_arguments

    parser = argparse.ArgumentParser(
        prog="side-feedback",
        description="Patrollers' decisions out of the results store: export them, or re-choose the verifier's cuts "
        "from them.")
    parser.add_argument("--config", help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    export = sub.add_parser("export", help="write reviewed results as a feedback export (JSON Lines)")
    export.add_argument("--out", type=Path, default=Path("-"), help="file to write (default: standard output)")
    export.add_argument("--wiki", help="only this wiki's reviews (e.g. enwiki)")
    calibrate = sub.add_parser("calibrate", help="export, then side calibrate --from the export",
                               description="Export the store's reviews to --export FILE, then re-choose the flag "
                               "and report cuts from it exactly as side calibrate --from FILE does.")
    calibrate.add_argument("--export", type=Path, help="where the export goes (default: VAR_DIR/feedback.jsonl)")
    calibrate.add_argument("--wiki", help="only this wiki's reviews")
    add_arguments(calibrate)
    return parser


def run_export(args: argparse.Namespace, store: Store) -> int:
    """``export``: the reviews to ``args.out`` (``-``: standard output)."""
    if str(args.out) == "-":
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            written = export_feedback(store, Path(tmp) / "feedback.jsonl", args.wiki)
            sys.stdout.write((Path(tmp) / "feedback.jsonl").read_text(encoding="utf-8"))
    else:
        if not args.out.parent.is_dir():
            raise SideError(f"directory not found: {args.out.parent}")
        written = export_feedback(store, args.out, args.wiki)
    log.info("%d reviewed results exported", written)
    return 0


def _calibrate(args: argparse.Namespace, store: Store, config: Config) -> int:
    import json

    from side.cli.calibrate import calibrate_file

    path = args.export or Path(config.var_dir) / "feedback.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    export_feedback(store, path, args.wiki)
    print(json.dumps(calibrate_file(path, args, config), indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        config = load_config(args.config)
        store = Store.open(config.database_url)
    except SideError as exc:
        print(f"side-feedback: error: {exc}", file=sys.stderr)
        return 2
    try:
        return run_export(args, store) if args.command == "export" else _calibrate(args, store, config)
    except SideError as exc:
        print(f"side-feedback: error: {exc}", file=sys.stderr)
        return 2
    finally:
        store.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

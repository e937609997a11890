"""The ``side`` command line: one entry point fronting the library.

Each command group lives in its own module with a ``register(subparsers)`` function. Errors
the user can fix (a missing file, an unreachable URL) print one line and exit 2; no traceback.
Commands that need the service stack (the results store) are plugins: packages name their
``register`` under the ``side.commands`` entry-point group, so ``side`` offers them without
importing anything the core library must not depend on.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from side.errors import SideError

__all__ = ["EXIT_USAGE", "DESCRIPTION", "build_parser", "main"]

#: Exit status for errors the user can fix.
EXIT_USAGE = 2

DESCRIPTION = """\
Side finds Wikipedia citations that probably do not support their claim, and suggests a
better source from an evidence corpus.

Typical first steps:
  side index build --demo        build the demo evidence index (shipped with Side)
  side verify ARTICLE.wikitext   score every citation of an article
  side index demo-article --out var/demo/Starbucks.wikitext
                                 an article of WiCE claims (shared data) whose cited pages
                                 `side index build --demo --dataset wice` indexes
  side lead ARTICLE.wikitext     check the lead's uncited sentences against the article's body
  side source URL                show the text Side reads from a cited source
  side search "query"            look something up in the evidence index
  side eval retrieval scifact    measure retrieval on SciFact
  side export hf DIR             the verifier as a Hugging Face checkpoint
  side calibrate --from-store    re-choose the cuts from patrollers' reviews in the results store
  side feedback export --out F   write the reviewed results as a versioned feedback file
"""


def _command_modules():
    from side.cli import calibrate, evaluate, export, index, lead, source, train, verify

    return [index, verify, lead, source, evaluate, train, calibrate, export]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="side", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--config", help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-vv for debug)")
    parser.add_argument("-q", "--quiet", action="store_true", help="only warnings and errors")
    parser.add_argument("--debug", action="store_true",
                        help="log lines in full, with their tracebacks (without it, each is one line)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _command_modules():
        module.register(sub)
    for register in _plugins():
        register(sub)
    return parser


def _plugins() -> list:
    """``register`` functions other packages add under the ``side.commands`` entry-point group; one
    that cannot load is logged and left out, so a broken plugin never breaks the core commands."""
    from importlib.metadata import entry_points

    found, names = [], set()
    for point in sorted(entry_points(group="side.commands"), key=lambda p: p.name):
        if point.name in names:  # the same plugin seen twice (two installs of one project)
            continue
        names.add(point.name)
        try:
            found.append(point.load())
        except Exception as exc:  # noqa: BLE001 - any failure of a plugin's import leaves it out
            logging.getLogger(__name__).warning("side command plugin %s not loaded: %s", point.name, exc)
    return found


def _configure_logging(verbose: int, quiet: bool, debug: bool = False) -> None:
    """Side's INFO lines on stderr, its libraries' warnings only; each record on one line without
    its traceback unless ``debug`` (:class:`~side.cli.terminal.CliFormatter`)."""
    level = logging.WARNING if quiet else (logging.DEBUG if verbose > 1 else logging.INFO)
    from side.cli.terminal import CliFormatter

    # Log lines quote URLs, titles and servers' answers: no control character of theirs reaches the terminal.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(CliFormatter("%(levelname)s %(name)s: %(message)s", debug=debug))
    logging.basicConfig(level=level, handlers=[handler])
    # Libraries whose INFO lines say nothing a user of `side` can act on (faiss: which CPU build it loaded).
    for noisy in ("urllib3", "filelock", "httpx", "trafilatura", "htmldate", "charset_normalizer", "faiss"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
    if verbose < 2:
        logging.getLogger("trafilatura").setLevel(logging.CRITICAL)


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # transformers' bar for loading local weights
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return EXIT_USAGE
    _configure_logging(args.verbose, args.quiet, args.debug)
    try:
        from side.config import load_config

        config = load_config(args.config)
        return int(args.func(args, config) or 0)
    except SideError as exc:
        from side.cli.terminal import printable

        print(printable(f"side: error: {exc}"), file=sys.stderr)
        return EXIT_USAGE
    except ImportError as exc:  # a plugin command (side feedback, --from-store) without its extra
        from side.extras import missing_extra_error

        error = missing_extra_error(exc)
        if error is None:
            raise
        print(f"side: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("side: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a path the user named that cannot be read or written (a file where a
        # folder must be, a full disk): the system's reason and the path, without a traceback
        logging.getLogger(__name__).debug("system error", exc_info=True)
        from side.cli.terminal import printable

        print(printable(f"side: error: {_os_error_text(exc)}"), file=sys.stderr)
        return EXIT_USAGE


def _os_error_text(exc: OSError) -> str:
    """``No such file or directory: PATH`` from an OSError, in one line."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    return f"{reason}: {' -> '.join(paths)}" if paths else reason


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

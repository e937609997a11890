"""``python -m bot.probe``: is the bot still following recent changes? (Toolforge health check)

    python -m bot.probe [--config FILE] [--checkpoint FILE] [--max-age S] [--grace S]

Exit 0 when it is, 1 when it is not, 2 when the configuration cannot be read; one line on
stdout says why. ``deploy/toolforge/jobs.yaml`` runs it as the ``side-bot`` job's
``health-check-script``; Toolforge restarts the container after three failures in a row.

The signal is the bot's checkpoint file: the bot replaces it after every change it handles
(skipped ones included), so on a busy wiki (English Wikipedia edits articles several times a
second) a checkpoint older than ``--max-age`` means the bot has stopped moving: an event
stream that hangs without closing, a wedged request. Two honest false alarms restart a bot
that could not work anyway: a wiki API down for longer than ``--max-age`` (the bot backs off
up to 5 minutes between tries), and a quiet wiki, for which ``--max-age`` must be raised.
For ``--grace`` seconds after the container started, the checkpoint of the previous run is
no evidence either way, and the bot counts as starting.
"""

from __future__ import annotations

import argparse
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from bot.checkpoint import checkpoint_path
from service.liveness import EXIT_USAGE, Liveness, container_age_s, exit_status, starting
from side.cli.checks import above, at_least
from side.config import load_config
from side.errors import SideError

#: Silence after which the bot is taken for stuck (three times its longest error backoff).
DEFAULT_MAX_AGE_S = 900.0
#: Start-up allowance: log in, open the store, connect to the event stream.
DEFAULT_GRACE_S = 300.0


def probe_bot(checkpoint: Path, max_age_s: float, age_s: float | None, grace_s: float,
              now: float | None = None) -> Liveness:
    """The verdict from the checkpoint file's modification time."""
    now = time.time() if now is None else now
    try:
        found = checkpoint.stat()
        # a folder (or anything but a file) at that path is no checkpoint the bot wrote
        silent_s: float | None = now - found.st_mtime if stat.S_ISREG(found.st_mode) else None
    except (FileNotFoundError, NotADirectoryError):
        silent_s = None
    if silent_s is not None and silent_s <= max_age_s:
        return Liveness(True, f"checkpoint {checkpoint} written {max(silent_s, 0):.0f} s ago")
    if starting(age_s, grace_s):
        return Liveness(True, f"starting ({age_s:.0f} s of {grace_s:.0f} s grace)")
    if silent_s is None:
        return Liveness(False, f"no checkpoint at {checkpoint}")
    return Liveness(False, f"checkpoint {checkpoint} not written for {silent_s:.0f} s "
                           f"(more than {max_age_s:.0f} s)")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bot.probe",
        description="Exit 0 when side-bot has written its checkpoint recently, 1 if not.")
    p.add_argument("--config", type=Path,
                   help="TOML configuration file (default: $SIDE_CONFIG or ./side.toml)")
    p.add_argument("--checkpoint", type=Path,
                   help="the bot's checkpoint file (default: bot.checkpoint, else var/bot-WIKI.json)")
    p.add_argument("--max-age", type=float, default=DEFAULT_MAX_AGE_S, metavar="S",
                   help=f"oldest checkpoint taken for alive (default {DEFAULT_MAX_AGE_S:.0f})")
    p.add_argument("--grace", type=float, default=DEFAULT_GRACE_S, metavar="S",
                   help=f"seconds after the container started during which anything is fine "
                        f"(default {DEFAULT_GRACE_S:.0f})")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        above(0, max_age=args.max_age)  # 0 or less: never alive, so restarted forever
        at_least(0, grace=args.grace)
        config = load_config(args.config)
    except SideError as exc:
        print(f"bot.probe: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    path = args.checkpoint or checkpoint_path(config.bot.checkpoint, config.bot.wiki, config.var_dir)
    return exit_status(probe_bot(path, args.max_age, container_age_s(), args.grace))


if __name__ == "__main__":
    sys.exit(main())

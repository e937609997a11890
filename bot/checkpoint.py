"""The bot's persisted position in recent changes, and the checks still waiting for a report.

A restart must neither miss nor repeat an edit. The bot handles changes in the wiki's own
order, ``(timestamp, rcid)`` (how ``list=recentchanges`` sorts and continues), and saves that
pair after each handled change, so a restarted bot asks for exactly the changes after it. The
save is atomic (a temporary file renamed over the old one), so a kill mid-write leaves the
previous checkpoint, never a torn one. A change handled but not yet saved when the process
dies is handled again; its Check id is derived from the work, so the store and the queue see
it once.

Submitted checks whose verdicts are not reported yet are kept here too (``pending``), so the
reporter picks them up after a restart.

So is the change in hand (``in_progress``): saved before a revision is read, cleared when the
change is handled. A bot killed while reading a revision (out of memory, a crash in a parser)
finds it there on restart with its count of attempts; after :data:`MAX_ATTEMPTS` attempts that
never finished, the change is skipped as "crashed twice" rather than read again, so one poison
revision cannot hold the bot in a crash loop.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from side.errors import SideError

log = logging.getLogger(__name__)

#: Attempts at one change that may end with the bot dead before it is skipped.
MAX_ATTEMPTS = 2


def write_json_atomically(path: Path, data: object) -> None:
    """Write ``data`` as JSON to ``path`` through a synced temporary file and a rename, so a bot
    killed mid-write leaves the old checkpoint or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class CheckpointError(SideError):
    """The checkpoint file exists but cannot be read; refusing to guess where to resume."""

    code = "bad_checkpoint"


@dataclass(frozen=True, order=True)
class Position:
    """A place in the recent-changes log: changes sort by (timestamp, rcid)."""

    #: ISO 8601 UTC, as the API writes it (``2026-11-22T16:28:07Z``); sorts as text.
    timestamp: str
    rcid: int

    def to_dict(self) -> dict[str, Any]:
        return {"timestamp": self.timestamp, "rcid": self.rcid}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Position:
        return cls(str(data["timestamp"]), int(data["rcid"]))


@dataclass(frozen=True)
class InProgress:
    """The change being handled, and how many times handling it has been started."""

    rcid: int
    revision: int
    attempts: int = 1

    @property
    def crashed_out(self) -> bool:
        """Whether it was started :data:`MAX_ATTEMPTS` times and never finished: skip it."""
        return self.attempts >= MAX_ATTEMPTS

    def to_dict(self) -> dict[str, Any]:
        return {"rcid": self.rcid, "revision": self.revision, "attempts": self.attempts}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InProgress:
        return cls(int(data["rcid"]), int(data["revision"]), int(data.get("attempts", 1)))


@dataclass(frozen=True)
class Checkpoint:
    """Where the bot is: the last handled change and the checks it still has to report."""

    wiki: str
    position: Position | None = None
    pending: tuple[str, ...] = field(default_factory=tuple)
    #: Changes handled since the file was created (for logs and the benchmark).
    handled: int = 0
    #: The change whose handling started and has not finished (None between changes).
    in_progress: InProgress | None = None

    def advance(self, position: Position) -> Checkpoint:
        return replace(self, position=position, handled=self.handled + 1, in_progress=None)

    def attempt(self, rcid: int, revision: int) -> Checkpoint:
        """Handling of a change starts: one attempt more if it was the change in hand before."""
        known = self.in_progress
        attempts = known.attempts + 1 if known and (known.rcid, known.revision) == (rcid, revision) else 1
        return replace(self, in_progress=InProgress(rcid, revision, attempts))

    def earlier_attempt(self, rcid: int, revision: int) -> InProgress | None:
        """What the checkpoint says of earlier attempts at this change (None: none recorded)."""
        known = self.in_progress
        return known if known and (known.rcid, known.revision) == (rcid, revision) else None

    def add_pending(self, check_id: str) -> Checkpoint:
        if check_id in self.pending:
            return self
        return replace(self, pending=(*self.pending, check_id))

    def drop_pending(self, check_ids: set[str]) -> Checkpoint:
        return replace(self, pending=tuple(c for c in self.pending if c not in check_ids))

    def to_dict(self) -> dict[str, Any]:
        return {"wiki": self.wiki, "position": self.position.to_dict() if self.position else None,
                "pending": list(self.pending), "handled": self.handled,
                "in_progress": self.in_progress.to_dict() if self.in_progress else None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Checkpoint:
        position, in_progress = data.get("position"), data.get("in_progress")
        pending = data.get("pending") or []
        if not isinstance(pending, list) or not all(isinstance(c, str) for c in pending):
            raise TypeError("pending is not a list of check ids")
        return cls(wiki=str(data["wiki"]), position=Position.from_dict(position) if position else None,
                   pending=tuple(pending), handled=int(data.get("handled", 0)),
                   in_progress=InProgress.from_dict(in_progress) if in_progress else None)


def checkpoint_path(checkpoint: str, wiki: str, var_dir: Path) -> Path:
    """The checkpoint file: ``bot.checkpoint`` when set, else ``var/bot-<wiki>.json``.

    One definition for the bot and its health check (``bot.probe``), which watches this file.
    """
    return Path(checkpoint) if checkpoint else Path(var_dir) / f"bot-{wiki}.json"


class CheckpointFile:
    """A JSON checkpoint on disk, replaced atomically on every save."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    def load(self, wiki: str) -> Checkpoint:
        """The saved checkpoint, or an empty one for a first run."""
        if not self.path.exists():
            return Checkpoint(wiki)
        try:
            checkpoint = Checkpoint.from_dict(json.loads(self.path.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:  # AttributeError: not an object
            raise CheckpointError(f"cannot read the checkpoint {self.path}: {exc}; fix or delete it "
                                  "(deleting it makes the bot start from the newest change)") from exc
        if checkpoint.wiki != wiki:
            raise CheckpointError(f"the checkpoint {self.path} belongs to wiki {checkpoint.wiki!r}, not {wiki!r}")
        return checkpoint

    def save(self, checkpoint: Checkpoint) -> None:
        write_json_atomically(self.path, checkpoint.to_dict())
        log.debug("checkpoint %s: %s", self.path, checkpoint.position)

"""Text from a wiki or a web page, printed on a terminal as text and nothing else.

A claim, a cited URL, a page title, a source's text, a reason naming a URL: anyone can write
them, and a terminal obeys what it is sent. Two things must never reach it:

- control characters: ESC starts the sequences that set the window title, clear the screen,
  write the clipboard (OSC 52) or make a hyperlink (OSC 8); BEL, backspace and a lone carriage
  return rewrite what was printed; the C1 range (U+0080-U+009F) holds one-character forms of the
  same. :func:`printable` shows each as a visible escape (``\\x1b``), keeping only newline and tab;
- console markup: rich reads ``[red]``, ``[/]`` or ``[link=file:///etc/passwd]`` in a string as
  styles and links (and a stray closing tag as an error). :func:`plain` makes a rich ``Text``,
  which rich never parses, so such text prints as typed.

``--json`` output needs neither: JSON escapes every control character itself.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

__all__ = ["printable", "plain", "report_console", "PrintableFormatter", "CliFormatter"]

#: Characters shown as escapes: C0 controls but tab and newline, DEL, and the C1 controls.
_CONTROLS = [*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0)]
_VISIBLE = {code: f"\\x{code:02x}" for code in _CONTROLS}


def printable(text: object) -> str:
    """``text`` as a string with every control character but newline and tab shown as an escape
    (``\\x1b``, ``\\x07``); a Windows line end (CR LF) is read as a newline."""
    return str(text).replace("\r\n", "\n").translate(_VISIBLE)


def plain(text: object, style: str = "") -> Text:
    """A rich ``Text`` of :func:`printable` ``text``: printed as typed, never read as markup."""
    from rich.text import Text

    return Text(printable(text), style=style)


def report_console() -> Console:
    """The console a command's table goes to: the terminal's width, or 160 columns when the
    output is piped or logged (not squeezed to 80)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=160)


class PrintableFormatter(logging.Formatter):
    """A log formatter whose lines carry no control characters (messages often quote a URL or a
    page's title); a traceback keeps its line breaks."""

    def format(self, record: logging.LogRecord) -> str:
        return printable(super().format(record))


def _is_side(name: str) -> bool:
    return name == "side" or name.startswith("side.")


def _exception_line(exc_info: object, message: str) -> str:
    """``Type: reason`` of a record's exception on one line; "" when it has none, or when
    ``message`` already quotes its reason."""
    if not isinstance(exc_info, tuple) or len(exc_info) != 3 or exc_info[1] is None:
        return ""
    error = exc_info[1]
    reason = " ".join(str(error).split())
    if reason and reason in " ".join(message.split()):
        return ""
    return f"{type(error).__name__}: {reason}" if reason else type(error).__name__


class CliFormatter(PrintableFormatter):
    """The ``side`` command's log lines: what a user acts on, never a traceback unless asked.

    A library logs for its own developers: urllib3 warns about a server's broken headers with
    the whole traceback of its parser, transformers writes paragraphs. Under the CLI, without
    ``debug`` (``side --debug``), a record's traceback and stack are left out (its exception is
    named at the end of the line, unless the message already says it), and a message from any
    logger outside ``side`` is folded onto one line. With ``debug``, records print in full.
    """

    def __init__(self, fmt: str, debug: bool = False) -> None:
        super().__init__(fmt)
        self.debug = debug

    def format(self, record: logging.LogRecord) -> str:
        if self.debug:
            return super().format(record)
        message = record.getMessage()
        error = _exception_line(record.exc_info, message)
        if error:
            message = f"{message} ({error})"
        if not _is_side(record.name):
            message = " ".join(line.strip() for line in message.splitlines() if line.strip())
        # A copy: other handlers of the same record (pytest's, a log file's) keep its traceback.
        brief = logging.makeLogRecord({**record.__dict__, "msg": message, "args": None, "exc_info": None,
                                       "exc_text": None, "stack_info": None})
        return super().format(brief)

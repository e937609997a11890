"""``side-bot``'s command line, read the way pywikibot scripts read theirs.

pywikibot's ``handle_args`` takes its global options (``-simulate``, ``-user:``, ``-site:``,
``-dir:``, ``-maxlag:``, any numeric config setting ...) and returns the rest; the bot's own
options are the keys of :class:`SideBotOptions` (an ``OptionHandler``, like every pywikibot
bot's); anything left is unknown and reported through ``suggest_help``. Nothing here keeps its
own list of pywikibot's options, so a new global option in pywikibot works without a change.

This module imports pywikibot, so it reads pywikibot's configuration (``PYWIKIBOT_DIR``) when
it is imported; ``bot.sidebot`` imports it only when the command line is read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any, ClassVar

import pywikibot
from pywikibot import config as pwb_config
from pywikibot.bot import OptionHandler, show_help, suggest_help

from side.errors import ConfigError, InputError

#: Options that print the help (pywikibot's ``-help``, ``-help:global``; the usual spellings too).
HELP_OPTIONS = frozenset({"-help", "--help", "-h"})
#: Options that take a number, and which kind.
NUMBERS: dict[str, type] = {"wait": float, "poll": float, "limit": int, "maxpages": int}
#: Of those, the ones 0 makes no sense for: no pause between polls (a tight loop against the
#: wiki), stopping before the first change, a backlog run of no pages.
POSITIVE = frozenset({"poll", "limit", "maxpages"})


class UsageError(InputError):
    """The command line itself is wrong: an unknown option, a missing or bad value."""


class SideBotOptions(OptionHandler):
    """The bot's own options, by their command-line names (``-wait:30`` is ``opt.wait``).

    A default of ``False`` makes a flag (``-post``); the others take a value (``-name:VALUE``),
    a number for the names in :data:`NUMBERS`.
    """

    available_options: ClassVar[dict[str, Any]] = {
        "post": False,        # really post talk-page reports (default: dry run)
        "once": False,        # handle what recent changes hold now, report, exit
        "stream": False,      # follow EventStreams instead of polling
        "noreport": False,    # submit checks only, never compose talk-page reports
        "wait": 0.0,          # with -once: seconds to wait for the checks to finish
        "limit": None,        # stop after N changes
        "poll": None,         # seconds between polls (default: bot.poll_interval_s)
        "start": None,        # first run: start at this timestamp
        "checkpoint": None,   # checkpoint file
        "wiki": None,         # wiki id stored with checks
        "api": None,          # a wiki without a pywikibot family, by its api.php URL
        "streamurl": None,    # with -stream: an EventStreams-compatible URL
        "sideconfig": None,   # Side's TOML configuration
        "backlog": False,     # check the claims in the tags' tracking categories, then exit
        "templates": None,    # with -backlog: these tags (comma-separated) instead of bot.backlog_templates
        "maxpages": None,     # with -backlog: pages per run (default: bot.backlog_max_pages)
    }


def option_name(arg: str) -> str:
    """``-wait:30`` -> ``wait``; an argument without a leading ``-`` has no option name."""
    return arg[1:].partition(":")[0] if arg.startswith("-") else ""


def is_own(arg: str) -> bool:
    return option_name(arg) in SideBotOptions.available_options


def _number(name: str, value: str, kind: type) -> float | int:
    try:
        number = kind(value)
    except ValueError:
        raise UsageError(f"-{name} needs a number, not {value!r}") from None
    if number != number:  # NaN
        raise UsageError(f"-{name} needs a number, not {value!r}")
    if number < 0:
        raise UsageError(f"-{name} must not be negative")
    if name in POSITIVE and number == 0:
        raise UsageError(f"-{name} must be more than 0")
    return number


def parse_options(args: Iterable[str]) -> SideBotOptions:
    """The bot's options from ``-name`` / ``-name:value`` arguments; anything else is an error."""
    options: dict[str, object] = {}
    for arg in args:
        name = option_name(arg)
        if name not in SideBotOptions.available_options:
            raise UsageError(f"unknown option {arg!r}")
        _, sep, value = arg.partition(":")
        if SideBotOptions.available_options[name] is False:
            if sep:
                raise UsageError(f"option -{name} takes no value")
            options[name] = True
        elif not value:
            raise UsageError(f"option -{name} needs a value (-{name}:VALUE)")
        else:
            options[name] = _number(name, value, NUMBERS[name]) if name in NUMBERS else value
    return SideBotOptions(**options)


def handle_global_args(args: list[str]) -> list[str]:
    """pywikibot's ``handle_args`` over the whole command line; returns what it did not take.

    ``handle_args`` ends by creating the default site to check ``-site``/``-family``/``-code``.
    An ``APISite`` would already query the wiki there, before the rest of the command line is
    known to be good (and a typo would wait on the network); pywikibot's ``BaseSite`` checks
    the same family and code offline, and the bot opens the real site afterwards.
    """
    interface, pwb_config.site_interface = pwb_config.site_interface, "BaseSite"
    try:
        return pywikibot.handle_args(args, do_help=False)
    except ValueError as exc:  # a global option with a bad number: -pt:x, -maxlag:x
        raise UsageError(f"bad value for a pywikibot option: {exc}") from None
    except pywikibot.exceptions.Error as exc:
        raise ConfigError(f"pywikibot refused the site: {exc}") from exc
    finally:
        pwb_config.site_interface = interface


def one_line_help(message: str) -> str:
    """What pywikibot's ``suggest_help`` says about ``message``, on one line.

    ``suggest_help`` logs the problem and "Use -help for further information." as one ERROR
    record of several lines; it is caught on pywikibot's logger so the operator gets one line
    (and scripts reading stderr get it last).
    """
    lines: list[str] = []

    def catch(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            lines.append(record.getMessage())
        return False

    logger = logging.getLogger("pywiki")
    logger.addFilter(catch)
    try:
        suggest_help(additional_text=message if message.endswith(".") else message + ".")
    finally:
        logger.removeFilter(catch)
    return " ".join(" ".join(lines).split())


def wants_help(args: Iterable[str]) -> str | None:
    """``global`` for ``-help:global``, ``""`` for plain help, None when no help is asked for."""
    for arg in args:
        name, _, value = arg.partition(":")
        if name in HELP_OPTIONS:
            return value
    return None


def print_help(module: str, which: str) -> None:
    """The module's docstring (its option list), then pywikibot's note or list of global options."""
    show_help(module, show_global=which == "global")

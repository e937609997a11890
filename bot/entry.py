"""Console script of the bot (pyproject.toml): ``side-bot`` needs the ``bot`` extra, and says so in
one line when it is not installed (:func:`side.extras.required_extra`)."""

from __future__ import annotations

from side.extras import required_extra

__all__ = ["bot"]


def bot() -> int:
    """``side-bot``: :func:`bot.sidebot.main` (it reads the command line's arguments)."""
    with required_extra("bot", "side-bot"):
        from bot.sidebot import main

        return main()

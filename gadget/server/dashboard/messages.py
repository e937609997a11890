"""The dashboard's language: its messages (``i18n/``, translatewiki.net JSON, ``side-dashboard-*``)
in the language of ``?uselang=`` or else the browser's Accept-Language, English by default.

Templates call ``msg("side-dashboard-...", param, ...)``: the message's own text and every plain
parameter are HTML-escaped, a :class:`~markupsafe.Markup` parameter (a link, a ``<time>``) is kept,
and the result is Markup. ``level_text`` names the verdict levels in the same language. Both are
Jinja globals that read the current request, so macros imported without context see them too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

from flask import Flask, g, has_request_context, request
from markupsafe import Markup, escape

from side.messages import FALLBACK, Catalog, Messages
from side.verify.levels import VerdictLevel

__all__ = ["CATALOG", "LevelText", "current_messages", "init_app", "msg"]

CATALOG = Catalog(Path(__file__).resolve().parent / "i18n")


def _language() -> str:
    if not has_request_context():
        return FALLBACK
    browser = request.accept_languages.best_match(CATALOG.languages)
    return CATALOG.choose([request.args.get("uselang"), browser])


def current_messages() -> Messages:
    """The messages of the current request's language (chosen once per request)."""
    if not has_request_context():
        return CATALOG.messages(FALLBACK)
    if "side_messages" not in g:
        g.side_messages = CATALOG.messages(_language())
    return g.side_messages


def msg(key: str, *params: object) -> Markup:
    messages = current_messages()
    return Markup(messages(key, *(escape(p) for p in params), escape=lambda text: str(escape(text))))


class LevelText(Mapping[str, str]):
    """Each verdict level's name (``"not_supported"`` -> "not supported"), in the request's language."""

    def __getitem__(self, level: str) -> str:
        try:
            value = VerdictLevel(level).value
        except ValueError:
            raise KeyError(level) from None
        return current_messages()(f"side-dashboard-level-{value.replace('_', '-')}")

    def __iter__(self) -> Iterator[str]:
        return iter(level.value for level in VerdictLevel)

    def __len__(self) -> int:
        return len(VerdictLevel)


def init_app(app: Flask) -> None:
    app.jinja_env.globals["msg"] = msg
    app.jinja_env.globals["level_text"] = LevelText()
    app.jinja_env.globals["ui_lang"] = lambda: current_messages().lang
    app.after_request(_vary)


def _vary(response):  # type: ignore[no-untyped-def]
    """Caches must keep one copy per language of a dashboard page chosen by Accept-Language."""
    if request.blueprint == "dashboard":
        response.vary.add("Accept-Language")
    return response

"""Interface messages in translatewiki.net's JSON format, for the talk-page report and the dashboard.

A message folder holds ``en.json`` (the source), ``qqq.json`` (documentation of every key) and one
file per other language, each ``{"@metadata": {...}, "key": "text", ...}``. Texts take ``$1``,
``$2`` ... parameters and ``{{PLURAL:$1|one|other}}`` where a count appears, as in MediaWiki, so
the same files can be translated on translatewiki.net. A key missing in a language falls back to
English; a key missing in English too is shown as ``⧼key⧽`` (MediaWiki's marker), never an error.

Parameters are substituted in one pass after ``{{PLURAL}}`` is resolved, so a parameter's own text
(an article title, a quote) can never select a plural form or spell another ``$n``. The caller
escapes parameters for its output (HTML, wikitext) before passing them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import cache
from pathlib import Path

__all__ = ["DECIMAL_SEPARATORS", "FALLBACK", "PLURAL_RULES", "Catalog", "Messages", "plural_index"]

#: The source language, and the one every missing message falls back to.
FALLBACK = "en"
#: The documentation pseudo-language of translatewiki.net; never shown.
DOCUMENTATION = "qqq"
_PLURAL = re.compile(r"\{\{PLURAL:\$(\d+)\|([^{}]*)\}\}")
_PARAM = re.compile(r"\$(\d+)")


def _one_other(n: float) -> int:
    return 0 if n == 1 else 1


#: CLDR plural rules by language: the index of the form to use for a count. English and German
#: both have "one" (exactly 1) and "other".
PLURAL_RULES: dict[str, Callable[[float], int]] = {"en": _one_other, "de": _one_other}


#: Decimal separators where they are not ".".
DECIMAL_SEPARATORS = {"de": ","}


def plural_index(lang: str, n: float) -> int:
    """Which ``{{PLURAL}}`` form a count takes in ``lang`` (English rules for others)."""
    return PLURAL_RULES.get(lang.split("-")[0], _one_other)(n)


def _number(value: object) -> float:
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        return 0.0


class Messages:
    """The messages of one language, English beneath: ``messages("key", param, ...)``."""

    def __init__(self, lang: str, texts: dict[str, str], fallback: dict[str, str]) -> None:
        self.lang = lang
        self._texts = texts
        self._fallback = fallback

    def __contains__(self, key: str) -> bool:
        return key in self._texts or key in self._fallback

    def number(self, value: float, digits: int = 2) -> str:
        """``value`` with ``digits`` decimals, written as the language writes numbers (0,05 in German)."""
        return f"{value:.{digits}f}".replace(".", DECIMAL_SEPARATORS.get(self.lang, "."))

    def __call__(self, key: str, *params: object, escape: Callable[[str], str] | None = None) -> str:
        """The message with its parameters; ``escape`` (e.g. HTML escaping) applies to the message's
        own text only, before the parameters, which the caller escapes for its output."""
        text = self._texts.get(key, self._fallback.get(key))
        if text is None:
            text = f"⧼{key}⧽"
        values = [str(p) for p in params]

        def plural(match: re.Match[str]) -> str:
            n = int(match.group(1))
            forms = match.group(2).split("|")
            count = _number(params[n - 1]) if n <= len(params) else 0
            return forms[min(plural_index(self.lang, count), len(forms) - 1)]

        text = _PLURAL.sub(plural, text)
        if escape is not None:
            text = escape(text)
        return _PARAM.sub(lambda m: values[int(m.group(1)) - 1] if 0 < int(m.group(1)) <= len(values)
                          else m.group(0), text)


class Catalog:
    """One message folder: its languages, and :class:`Messages` for any of them."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder)
        self._files = {path.stem: path for path in sorted(self.folder.glob("*.json"))}
        if FALLBACK not in self._files:
            raise FileNotFoundError(f"{self.folder} has no {FALLBACK}.json")

    @property
    def languages(self) -> list[str]:
        """The languages with a message file (the documentation excluded), English first."""
        return [FALLBACK] + [lang for lang in self._files if lang not in (FALLBACK, DOCUMENTATION)]

    def texts(self, lang: str) -> dict[str, str]:
        """The raw messages of a file (``{}`` for a language without one), ``@metadata`` left out."""
        return dict(_load(self._files[lang])) if lang in self._files else {}

    def choose(self, wanted: Iterable[str | None]) -> str:
        """The first of ``wanted`` that has messages (``de-at`` counts as ``de``), else English."""
        available = set(self.languages)
        for lang in wanted:
            code = (lang or "").strip().lower().replace("_", "-")
            for candidate in (code, code.split("-")[0]):
                if candidate in available:
                    return candidate
        return FALLBACK

    def messages(self, lang: str | None) -> Messages:
        chosen = self.choose([lang])
        return Messages(chosen, self.texts(chosen), self.texts(FALLBACK))


@cache
def _load(path: Path) -> tuple[tuple[str, str], ...]:
    data = json.loads(path.read_text(encoding="utf-8"))
    return tuple((key, text) for key, text in data.items() if key != "@metadata")

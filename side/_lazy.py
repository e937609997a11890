"""Lazy re-exports for package ``__init__`` modules (PEP 562).

``import side`` and ``import side.extract`` must stay cheap: the bot and the web service import
the wikitext reader without paying for torch and transformers. A package names what it re-exports
and from where; the module is imported on first attribute access.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, exports: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``, resolving ``name`` from ``exports[name]``."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__

"""The patrol dashboard (``/dashboard``): the queue of flagged results, pages, stats and review forms."""

from __future__ import annotations

from gadget.server.dashboard.views import init_app

__all__ = ["init_app"]

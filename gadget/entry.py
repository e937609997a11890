"""Console script of the gadget's web service (pyproject.toml): ``side-web`` needs the ``service``
extra, and says so in one line when it is not installed (:func:`side.extras.required_extra`)."""

from __future__ import annotations

from side.extras import required_extra

__all__ = ["web"]


def web() -> int:
    """``side-web``: :func:`gadget.server.serve.main`."""
    with required_extra("service", "side-web"):
        from gadget.server.serve import main

        return main()

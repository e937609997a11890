"""Console script of the results store's feedback export (pyproject.toml): ``side-feedback`` needs
the ``service`` extra, and says so in one line when it is not installed
(:func:`side.extras.required_extra`)."""

from __future__ import annotations

from side.extras import required_extra

__all__ = ["feedback"]


def feedback() -> int:
    """``side-feedback``: :func:`service.feedback.main`."""
    with required_extra("service", "side-feedback"):
        from service.feedback import main

        return main()

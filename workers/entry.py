"""Console scripts of the workers (pyproject.toml): each needs the ``service`` extra, and says so in
one line when it is not installed (:func:`side.extras.required_extra`)."""

from __future__ import annotations

from side.extras import required_extra

__all__ = ["worker", "stack"]


def worker() -> int:
    """``side-worker``: :func:`workers.worker.main`."""
    with required_extra("service", "side-worker"):
        from workers.worker import main

        return main()


def stack() -> int:
    """``side-stack``: :func:`workers.stack.main`."""
    with required_extra("service", "side-stack"):
        from workers.stack import main

        return main()

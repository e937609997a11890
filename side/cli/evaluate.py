"""``side eval``: print quality metrics as a table, or ``--json`` for machines.

Each evaluation lives in its own module with ``register(subparsers)``; every one takes a
file path in the schema of the shared file so that other splits can be evaluated unchanged.
"""

from __future__ import annotations

import argparse

__all__ = ["register"]


def register(sub: argparse._SubParsersAction) -> None:
    from side.cli import (
        eval_extraction,
        eval_framing,
        eval_lead,
        eval_retrieval,
        eval_sources,
        eval_verify,
        eval_window,
    )

    parser = sub.add_parser(
        "eval", help="measure quality (extraction, source states, retrieval, verification, judge window, lead claims, "
        "wrapped claims)")
    evals = parser.add_subparsers(dest="evaluation", metavar="EVALUATION", required=True)
    for module in (eval_extraction, eval_sources, eval_retrieval, eval_verify, eval_window, eval_lead, eval_framing):
        module.register(evals)

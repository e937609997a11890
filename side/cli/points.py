"""The operating-point table that ``side eval verify`` and ``side eval verify --judge`` print
(one module both import, so neither imports the other back)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["print_operating_points"]


def _fmt(value: float | None) -> str:
    return "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.3f}"


def print_operating_points(console: Any, name: str, rows: list[dict[str, Any]]) -> None:
    """The operating-point table of :func:`side.evaluation.verify.operating_points`."""
    from rich.table import Table

    table = Table(title=f"{name}: needs review at operating points")
    for col in ("point", "cut", "supported flagged", "precision", "recall", "unsure", "high severity"):
        table.add_column(col)
    for row in rows:
        table.add_row(row["point"], _fmt(row["cut"]), _fmt(row["supported_flagged"]), _fmt(row["precision"]),
                      _fmt(row["recall"]), _fmt(row["unsure_share"]), _fmt(row["high_severity_share"]))
    console.print(table)
    console.print("precision / recall: of needs review (gold partially or not supported); supported flagged: share "
                  "of supported citations flagged; unsure: share of all citations between the cut and the "
                  "supported cut; high severity: share of all citations flagged at high severity")

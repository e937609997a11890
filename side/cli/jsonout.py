"""``--json`` output that is JSON: a metric over items of one class only (an AUROC with no
negatives) is NaN, which Python's ``json`` writes as the bare word ``NaN`` that no JSON reader
takes. Here it is ``null``, as is an infinite value."""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["json_text"]


def json_text(value: Any, **options: Any) -> str:
    """``json.dumps(value, **options)`` with every non-finite float written as null."""
    return json.dumps(_finite(value), allow_nan=False, **options)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value

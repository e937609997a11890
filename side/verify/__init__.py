"""The verification engine: how well a source supports a claim, and which sentences show it.

Third and fourth steps of the flow (source -> evidence -> verdict): :func:`select_evidence` picks
the sentences nearest a claim; the :class:`Verifier` (a fine-tuned :class:`CrossEncoder` and a
calibrated combiner) turns them into a :class:`Verdict`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports

if TYPE_CHECKING:
    from side.verify.crossencoder import CrossEncoder, Pair
    from side.verify.evidence import select_evidence
    from side.verify.verifier import Evidence, Query, Verdict, Verifier

__all__ = [
    "CrossEncoder", "Evidence", "Pair", "Query", "Verdict", "Verifier", "select_evidence",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "CrossEncoder": "side.verify.crossencoder",
    "Pair": "side.verify.crossencoder",
    "select_evidence": "side.verify.evidence",
    "Evidence": "side.verify.verifier",
    "Query": "side.verify.verifier",
    "Verdict": "side.verify.verifier",
    "Verifier": "side.verify.verifier",
})

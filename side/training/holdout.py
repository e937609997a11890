"""The WiCE train and SciFact train claims kept from the cross-encoder for the combiner.

The combiner learns how much to trust each of the verifier's signals from WiCE train and SciFact
train. A cross-encoder trained on the same claims scores them better than it scores any new page,
so a combiner fitted on them trusts it too much (the chunk model's combiner did: its weights on
the cross-encoder's signals were earned on pages it had learnt). With a share held out, the
cross-encoder never trains on those claims and the combiner and its level cuts are fitted on them
alone. The split is a hash of the claim's id, so training, the combiner refit and any later
``--combiner-only`` run agree on it without storing a list.
"""

from __future__ import annotations

import hashlib

__all__ = ["fits_combiner", "held_out", "scifact_key", "wice_key"]


def wice_key(claim_id: str) -> str:
    """A WiCE sub-claim's key: its claim's id, so the sub-claims of one page fall on one side."""
    return "wice:" + str(claim_id).split("-")[0]


def scifact_key(claim_id: int) -> str:
    return f"scifact:{claim_id}"


def held_out(key: str, share: float) -> bool:
    """Whether the claim with ``key`` is in the held-out ``share`` (0: none, every claim trains)."""
    if share <= 0:
        return False
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < share


def fits_combiner(key: str, share: float) -> bool:
    """Whether the combiner is fitted on the claim with ``key``: the held-out ones when a share
    is held out, every claim when none is (the combiner then sees what the cross-encoder saw)."""
    return share <= 0 or held_out(key, share)

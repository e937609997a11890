"""Rebuild the shipped verifier from shared data: training pairs, fine-tuning, calibration.

Used by ``side train verifier`` only; nothing at run time imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from side._lazy import lazy_exports

if TYPE_CHECKING:
    from side.training.calibration import choose_levels, fit_combiner
    from side.training.finetune import TrainSettings, train_verifier
    from side.training.trainset import Example, build_examples

__all__ = [
    "Example", "TrainSettings", "build_examples", "choose_levels", "fit_combiner", "train_verifier",
]

__getattr__, __dir__ = lazy_exports(__name__, {
    "Example": "side.training.trainset",
    "build_examples": "side.training.trainset",
    "TrainSettings": "side.training.finetune",
    "train_verifier": "side.training.finetune",
    "choose_levels": "side.training.calibration",
    "fit_combiner": "side.training.calibration",
})

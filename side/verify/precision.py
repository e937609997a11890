"""The number format the transformers (cross-encoder and bi-encoder) run in.

On a CPU with native bfloat16 matrix units (Intel AMX or AVX512-BF16, as on some of the Xeons
this project is developed and tested on; others are AVX2-only AMD EPYCs), oneDNN multiplies bf16
matrices several times faster than fp32 ones, while the SUPPORTS probability moves by less than a
thousandth (see the model card's CPU speed section).
So ``auto`` means bf16 there and fp32 everywhere else: a CPU without those units would emulate
bf16 and run slower, and on a GPU the measured gain of half precision at this model size is nil.
int8 dynamic quantization stays available by name; it drifts more and gains less than bf16.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, TypeVar

from side.errors import ConfigError

__all__ = ["PRECISIONS", "BF16_TOLERANCE", "native_bf16", "resolve", "ModelT", "apply", "autocast_dtype"]

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

PRECISIONS = ("auto", "fp32", "bf16", "int8")

#: Stated tolerance of the bf16 path: the largest change of a label probability against fp32 that
#: it may make on real pairs (measured: 0.0007 on 512 WiCE pairs; tests/test_precision.py holds it).
BF16_TOLERANCE = 0.01


def native_bf16() -> bool:
    """True when this CPU multiplies bf16 matrices in hardware (AMX tiles or AVX512-BF16)."""
    import torch

    cpu = torch.cpu
    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(getattr(cpu, name, lambda: False)() for name in checks)


def resolve(precision: str, device: str) -> str:
    """The concrete precision (fp32, bf16 or int8) that ``precision`` means on ``device``."""
    if precision not in PRECISIONS:
        raise ConfigError(f"unknown precision {precision!r}; choose one of {', '.join(PRECISIONS)}")
    on_cpu = device == "cpu"
    if precision == "auto":
        return "bf16" if on_cpu and native_bf16() else "fp32"
    if precision == "int8" and not on_cpu:
        raise ConfigError(f"int8 dynamic quantization runs on a CPU only, not on {device}")
    if precision == "bf16" and on_cpu and not native_bf16():
        log.warning("this CPU has no native bf16 units: bf16 will be slower than fp32")
    return precision


#: A model keeps its class through :func:`apply` (int8 swaps its Linear layers in place of a copy).
ModelT = TypeVar("ModelT", bound="torch.nn.Module")


def apply(model: ModelT, precision: str) -> ModelT:
    """``model`` converted for inference in the (resolved) ``precision``."""
    import torch

    if precision == "bf16":
        return model.to(torch.bfloat16)
    if precision == "int8":
        quantized: ModelT = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
        return quantized
    return model


def autocast_dtype(device: str) -> torch.dtype | None:
    """The autocast dtype for training on ``device``: bf16 on a GPU or a bf16-capable CPU, else None.

    The weights and optimizer state stay fp32; only the matrix products run in bf16, which is what
    lets the full training recipe fit a 2-core CPU's time budget on such a machine.
    """
    import torch

    if device.startswith("cuda") or (device == "cpu" and native_bf16()):
        return torch.bfloat16
    return None

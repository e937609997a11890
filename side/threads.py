"""How many threads torch runs for inference: by default, the CPUs this process may really use.

torch starts one intra-op thread per physical core of the host. In a container with a CPU quota
(Toolforge's jobs get 0.5 to 2 CPUs on hosts with many more cores; a Lift Wing pod its CPU
limit) that is far more threads than the quota pays for: OpenMP threads busy-wait for each
other at every parallel region, the quota is spent spinning, the cgroup is throttled, and a
verdict takes several times its CPU time in wall time. So the count is the smaller of the CPUs
the scheduler lets this process run on (its affinity) and the cgroup's CPU quota, rounded up.

``verifier.threads`` (``SIDE_VERIFIER_THREADS``) chooses: 0 (the default) is that automatic
count, unless ``OMP_NUM_THREADS`` is set (then torch's own reading of it stands); a positive
number is used as given. The choice is made once per process, when the first model is loaded
for inference (:func:`apply_inference_threads`), and logged.

Reading the cgroup files is defensive: a file missing, unreadable or malformed means no quota.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from side.errors import ConfigError

__all__ = ["CGROUP_ROOT", "ThreadChoice", "cgroup_cpu_limit", "usable_cpus", "choose_threads",
           "apply_inference_threads", "set_threads"]

log = logging.getLogger(__name__)

CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")

#: The count this process settled on, once chosen (None: not yet).
_chosen: ThreadChoice | None = None


@dataclass(frozen=True)
class ThreadChoice:
    """Threads for torch and why; ``threads`` None leaves torch's own count (``OMP_NUM_THREADS``)."""

    threads: int | None
    reason: str


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None


def _ratio(quota: str, period: str) -> float | None:
    """CPUs a quota and period of microseconds allow; None for no quota or anything unreadable."""
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None  # "max" (cgroup v2's no limit) lands here too
    if quota_us <= 0 or period_us <= 0:  # v1 writes -1 for no limit
        return None
    return quota_us / period_us


def v2_limit(text: str | None) -> float | None:
    """CPUs allowed by a cgroup v2 ``cpu.max`` ("QUOTA PERIOD", QUOTA "max" for none)."""
    parts = (text or "").split()
    if not parts:
        return None
    return _ratio(parts[0], parts[1] if len(parts) > 1 else "100000")


def _own_paths(proc_cgroup: Path) -> tuple[str | None, str | None]:
    """This process's cgroup path in the v2 hierarchy and in v1's cpu controller, if listed."""
    v2 = v1 = None
    for line in (_read(proc_cgroup) or "").splitlines():
        fields = line.split(":", 2)
        if len(fields) != 3:
            continue
        number, controllers, path = fields
        if number == "0" and controllers == "":
            v2 = path
        elif "cpu" in controllers.split(","):
            v1 = path
    return v2, v1


def _chain(mount: Path, path: str | None) -> list[Path]:
    """The cgroup folder of ``path`` under ``mount`` and its parents up to ``mount``: a quota set
    on any of them limits this process. Inside a container's cgroup namespace the path is "/"."""
    folders = [mount]
    if path and path.strip("/"):
        current = mount
        for part in path.strip("/").split("/"):
            if part in ("", ".", ".."):
                break
            current = current / part
            folders.append(current)
    return folders


def cgroup_cpu_limit(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP) -> float | None:
    """CPUs the cgroup CPU quota allows this process (quota / period; the smallest along its
    cgroup's path, v2 and v1 alike), or None when no quota is set or none can be read."""
    v2_path, v1_path = _own_paths(proc_cgroup)
    limits = []
    for mount in (root, root / "unified"):  # v2, alone or beside v1 ("hybrid")
        limits += [v2_limit(_read(folder / "cpu.max")) for folder in _chain(mount, v2_path)]
    for mount in (root / "cpu", root / "cpu,cpuacct", root / "cpuacct,cpu"):
        for folder in _chain(mount, v1_path):
            quota, period = _read(folder / "cpu.cfs_quota_us"), _read(folder / "cpu.cfs_period_us")
            if quota is not None and period is not None:
                limits.append(_ratio(quota, period))
    known = [limit for limit in limits if limit is not None]
    return min(known) if known else None


def _affinity() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


def usable_cpus(root: Path = CGROUP_ROOT, proc_cgroup: Path = PROC_CGROUP, affinity: int | None = None) -> int:
    """The CPUs this process may actually use: its affinity, cut to the cgroup quota rounded up
    (0.5 CPU -> 1, 1.5 -> 2), at least 1."""
    cpus = _affinity() if affinity is None else affinity
    limit = cgroup_cpu_limit(root, proc_cgroup)
    if limit is not None:
        cpus = min(cpus, math.ceil(limit))
    return max(1, cpus)


def check_setting(setting: int) -> int:
    """``verifier.threads`` as given, or a ConfigError saying what it may be."""
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 0:
        raise ConfigError(f"verifier.threads must be 0 (automatic: the CPUs this process may use) "
                          f"or a number of threads, not {setting!r}")
    return setting


def choose_threads(setting: int, environ: Mapping[str, str] | None = None, root: Path = CGROUP_ROOT,
                   proc_cgroup: Path = PROC_CGROUP, affinity: int | None = None) -> ThreadChoice:
    """The count for ``verifier.threads`` = ``setting``: itself when positive; else torch's own
    when ``OMP_NUM_THREADS`` is set (an operator's explicit choice, which torch reads itself);
    else :func:`usable_cpus`."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    if check_setting(setting):
        return ThreadChoice(setting, "verifier.threads")
    given = env.get("OMP_NUM_THREADS", "").strip()
    if given:
        return ThreadChoice(None, f"OMP_NUM_THREADS={given}")
    cpus = _affinity() if affinity is None else affinity
    limit = cgroup_cpu_limit(root, proc_cgroup)
    threads = usable_cpus(root, proc_cgroup, cpus)
    quota = "no CPU quota" if limit is None else f"CPU quota {limit:g}"
    return ThreadChoice(threads, f"automatic: {cpus} CPUs in this process's affinity, {quota}")


def set_threads(threads: int, reason: str) -> None:
    """Set torch's intra-op (and, when still possible, inter-op) thread counts, and remember the
    choice so that models loaded later keep it: the process's one decision on threads."""
    import torch

    global _chosen
    torch.set_num_threads(threads)
    try:
        # Only before any inter-op work has started; nothing in Side uses that pool, so a
        # count left as it was costs idle threads only.
        torch.set_num_interop_threads(threads)
    except RuntimeError:
        log.debug("torch inter-op threads already started: left at %d", torch.get_num_interop_threads())
    _chosen = ThreadChoice(threads, reason)
    log.info("torch threads: %d (%s)", threads, reason)


def apply_inference_threads(setting: int) -> ThreadChoice:
    """Settle torch's thread count for inference once per process (see the module's docstring);
    later calls keep the first decision, as does an earlier :func:`set_threads` (training's)."""
    global _chosen
    if _chosen is not None:
        return _chosen
    choice = choose_threads(setting)
    if choice.threads is None:
        import torch

        _chosen = choice
        log.info("torch threads: %d (%s)", torch.get_num_threads(), choice.reason)
    else:
        set_threads(choice.threads, choice.reason)
    return choice

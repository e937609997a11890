"""torch's thread count for inference: cgroup quotas, affinity, the setting, and that loading applies it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from side.config import REPO_ROOT, load_config
from side.errors import ConfigError
from side.threads import cgroup_cpu_limit, choose_threads, usable_cpus, v2_limit


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n", encoding="ascii")


@pytest.fixture
def no_proc(tmp_path) -> Path:
    """A /proc/self/cgroup of a process in its container's root cgroup (what a pod sees)."""
    path = tmp_path / "proc-cgroup"
    path.write_text("0::/\n", encoding="ascii")
    return path


@pytest.mark.parametrize(("text", "cpus"), [("max 100000", None), ("150000 100000", 2), ("50000 100000", 1),
                                            ("200000 100000", 2), ("100000 100000", 1)])
def test_cgroup_v2_quota_rounds_up(tmp_path, no_proc, text, cpus):
    write(tmp_path / "cgroup" / "cpu.max", text)
    assert usable_cpus(tmp_path / "cgroup", no_proc, affinity=64) == (64 if cpus is None else cpus)


def test_cgroup_v2_malformed_means_no_quota():
    assert v2_limit("max") is None
    assert v2_limit("") is None
    assert v2_limit(None) is None
    assert v2_limit("abc 100000") is None
    assert v2_limit("100000 0") is None
    assert v2_limit("250000 100000") == 2.5


@pytest.mark.parametrize(("quota", "period", "cpus"), [("-1", "100000", 64), ("100000", "100000", 1),
                                                       ("150000", "100000", 2), ("50000", "100000", 1)])
def test_cgroup_v1_quota(tmp_path, no_proc, quota, period, cpus):
    root = tmp_path / "cgroup"
    write(root / "cpu" / "cpu.cfs_quota_us", quota)
    write(root / "cpu" / "cpu.cfs_period_us", period)
    assert usable_cpus(root, no_proc, affinity=64) == cpus


def test_cgroup_v1_combined_controller_folder(tmp_path, no_proc):
    root = tmp_path / "cgroup"
    write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "300000")
    write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000")
    assert cgroup_cpu_limit(root, no_proc) == 3


def test_missing_files_mean_no_quota(tmp_path, no_proc):
    root = tmp_path / "cgroup"
    assert cgroup_cpu_limit(root, no_proc) is None
    assert cgroup_cpu_limit(root, tmp_path / "no-such-proc-file") is None
    write(root / "cpu" / "cpu.cfs_quota_us", "100000")  # a quota without its period is not read
    assert cgroup_cpu_limit(root, no_proc) is None
    assert usable_cpus(root, no_proc, affinity=3) == 3


def test_quota_of_the_process_own_cgroup_and_its_parents(tmp_path):
    """Outside a cgroup namespace the quota sits on the process's cgroup or a parent (a systemd
    slice), not at the mount's root; the smallest one along the path holds."""
    root = tmp_path / "cgroup"
    proc = tmp_path / "proc-cgroup"
    proc.write_text("0::/system.slice/side.service\n", encoding="ascii")
    write(root / "system.slice" / "cpu.max", "400000 100000")
    write(root / "system.slice" / "side.service" / "cpu.max", "max 100000")
    write(root / "other.slice" / "cpu.max", "50000 100000")  # another cgroup's: not ours
    assert cgroup_cpu_limit(root, proc) == 4
    write(root / "system.slice" / "side.service" / "cpu.max", "120000 100000")
    assert cgroup_cpu_limit(root, proc) == 1.2
    assert usable_cpus(root, proc, affinity=16) == 2


def test_v1_path_from_proc_and_hybrid_v2(tmp_path):
    root = tmp_path / "cgroup"
    proc = tmp_path / "proc-cgroup"
    proc.write_text("4:memory:/a\n2:cpu,cpuacct:/docker/abc\n0::/docker/abc\n", encoding="ascii")
    write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_quota_us", "200000")
    write(root / "cpu,cpuacct" / "docker" / "abc" / "cpu.cfs_period_us", "100000")
    assert cgroup_cpu_limit(root, proc) == 2
    write(root / "unified" / "docker" / "cpu.max", "100000 100000")
    assert cgroup_cpu_limit(root, proc) == 1


def test_affinity_limits_when_there_is_no_quota_or_a_larger_one(tmp_path, no_proc):
    root = tmp_path / "cgroup"
    assert usable_cpus(root, no_proc, affinity=1) == 1
    write(root / "cpu.max", "800000 100000")
    assert usable_cpus(root, no_proc, affinity=3) == 3
    assert usable_cpus(root, no_proc, affinity=0) == 1  # never none


def test_real_affinity_is_the_default():
    assert usable_cpus(Path("/nonexistent"), Path("/nonexistent")) == len(os.sched_getaffinity(0))


def test_choice_explicit_env_and_automatic(tmp_path, no_proc):
    root = tmp_path / "cgroup"
    write(root / "cpu.max", "50000 100000")
    assert choose_threads(3, {"OMP_NUM_THREADS": "2"}, root, no_proc, affinity=8).threads == 3
    by_env = choose_threads(0, {"OMP_NUM_THREADS": "2"}, root, no_proc, affinity=8)
    assert by_env.threads is None and "OMP_NUM_THREADS=2" in by_env.reason
    auto = choose_threads(0, {}, root, no_proc, affinity=8)
    assert auto.threads == 1 and "quota 0.5" in auto.reason
    assert choose_threads(0, {"OMP_NUM_THREADS": " "}, root, no_proc, affinity=8).threads == 1
    with pytest.raises(ConfigError, match="verifier.threads"):
        choose_threads(-1, {}, root, no_proc)


def test_config_reads_the_setting_from_toml_and_env(tmp_path):
    assert load_config(environ={}).verifier.threads == 0
    toml = tmp_path / "side.toml"
    toml.write_text("[verifier]\nthreads = 3\n", encoding="utf-8")
    assert load_config(toml, environ={}).verifier.threads == 3
    assert load_config(toml, environ={"SIDE_VERIFIER_THREADS": "1"}).verifier.threads == 1


@pytest.mark.parametrize("source", ["toml", "env"])
def test_config_refuses_a_negative_count(tmp_path, source):
    toml = tmp_path / "side.toml"
    toml.write_text("[verifier]\nthreads = -2\n" if source == "toml" else "", encoding="utf-8")
    environ = {"SIDE_VERIFIER_THREADS": "-2"} if source == "env" else {}
    with pytest.raises(ConfigError, match=r"verifier\.threads must be 0 \(automatic.*not -2"):
        load_config(toml, environ=environ)


def test_cli_refuses_a_negative_count_in_one_line():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SIDE_VERIFIER_THREADS": "-1"}
    done = subprocess.run([sys.executable, "-m", "side", "verify", "--offline", "no-such-page.wiki"], env=env,
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "side: error: verifier.threads must be 0 (automatic: the CPUs this process may use) "
        "or a number of threads, not -1"]


LOAD_AND_REPORT = """
import json, logging, sys, threading
logging.basicConfig(level=logging.INFO, stream=sys.stderr)
import torch
from side.config import load_config
from side.verify.verifier import Verifier
start = torch.get_num_threads()
Verifier.from_config(load_config())
seen = {}
worker = threading.Thread(target=lambda: seen.update(worker=torch.get_num_threads()))
worker.start(); worker.join()
print(json.dumps({"start": start, "after": torch.get_num_threads(), **seen}))
"""


def load_in_subprocess(environ: dict[str, str]) -> tuple[dict, str]:
    """torch's thread count before and after loading the verifier, in a process of its own
    (the count is global to a process)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "SIDE_VERIFIER_THREADS")}
    env.update(PYTHONPATH=str(REPO_ROOT), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", **environ)
    done = subprocess.run([sys.executable, "-c", LOAD_AND_REPORT], env=env, capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_loading_the_verifier_applies_an_explicit_count():
    wanted = (os.cpu_count() or 1) + 1  # more than torch's own default, so the default cannot pass
    counts, log = load_in_subprocess({"SIDE_VERIFIER_THREADS": str(wanted)})
    assert counts["start"] != wanted
    assert counts["after"] == wanted
    assert counts["worker"] == wanted  # a thread that runs checks later (Lift Wing, the benchmark) too
    assert f"torch threads: {wanted} (verifier.threads)" in log
    assert log.count("torch threads:") == 1


def test_loading_the_verifier_keeps_omp_num_threads_when_automatic():
    counts, log = load_in_subprocess({"OMP_NUM_THREADS": "1"})  # torch caps larger values at the cores
    assert counts["start"] == counts["after"] == counts["worker"] == 1
    assert "torch threads: 1 (OMP_NUM_THREADS=1)" in log


def test_loading_the_verifier_automatic_count():
    counts, log = load_in_subprocess({})
    assert counts["after"] == usable_cpus()
    assert "automatic:" in log

"""Toolforge health checks (jobs.yaml ``health-check-script``) and worker names, on a real Redis.

``workers.probe`` must say alive for a worker that heartbeats and dead for one that stopped;
``bot.probe`` reads the checkpoint file the bot really writes. Workers started with no
``--name`` (as jobs.yaml starts them) must be able to run side by side, as replicas do.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import redis
from rq import Queue, Worker
from rq.utils import utcformat

from bot.checkpoint import Checkpoint, CheckpointFile, Position, checkpoint_path
from bot.probe import probe_bot
from service.liveness import container_age_s
from service.store import Store
from service.stream import beat_scorer, scorer_beats, stream_key
from side.config import REPO_ROOT, ServiceConfig
from workers.jobs import WorkerContext
from workers.probe import probe_scorer, probe_worker
from workers.scorer import Scorer

from harness import free_port

QUEUE = "probe-test"
#: ``side-worker``'s work loop without the model (no jobs are queued): the naming and the
#: registration are what these tests are about.
WORKER_LOOP = """
import sys
from service.queue import redis_connection
from side.config import load_config
from workers.worker import build_parser, serve
args = build_parser().parse_args(sys.argv[1:])
config = load_config()
sys.exit(serve(config, args, redis_connection(config.service.redis_url), None))
"""


def empty_config(folder: Path) -> Path:
    """A configuration file with no settings, so that no ./side.toml of the checkout is read."""
    path = folder / "empty.toml"
    path.write_text("")
    return path


def env_for(redis_url: str, tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "SIDE_SERVICE_REDIS_URL": redis_url, "SIDE_SERVICE_QUEUE": QUEUE,
            "SIDE_VAR_DIR": str(tmp_path / "var"), "SIDE_CONFIG": str(empty_config(tmp_path))}


def start_loop(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen:
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, "-c", WORKER_LOOP, "--maintenance", "5", *args], env=env,
                                cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)


def registered(connection: redis.Redis) -> list[Worker]:
    return Worker.all(queue=Queue(QUEUE, connection=connection))


def wait_for(condition, what: str, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def run_probe(module: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", module, *args], env=env, cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=60, check=False)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def test_workers_without_a_name_run_side_by_side_and_the_probe_sees_them(redis_db, tmp_path):
    env, log = env_for(redis_db.url, tmp_path), tmp_path / "workers.log"
    connection = redis_db.client()
    loops = [start_loop(env, log), start_loop(env, log)]
    try:
        workers = wait_for(lambda: len(registered(connection)) == 2 and registered(connection),
                           f"two workers on {QUEUE} (log: {log})")
        host = socket.gethostname()
        assert sorted(w.name for w in workers) == sorted(f"{host}.{p.pid}" for p in loops)
        assert all(p.poll() is None for p in loops)

        alive = run_probe("workers.probe", env, "--grace", "0")
        assert alive.returncode == 0, alive.stdout + alive.stderr
        assert alive.stdout.startswith("alive: worker ") and host in alive.stdout
    finally:
        for loop in loops:
            stop(loop)
    assert [p.returncode for p in loops] == [0, 0]
    assert registered(connection) == []  # both said goodbye on SIGTERM
    dead = run_probe("workers.probe", env, "--grace", "0")
    assert dead.returncode == 1 and dead.stdout.startswith("NOT alive: no worker "), dead.stdout + dead.stderr


def test_a_fixed_worker_name_lets_only_one_replica_run(redis_db, tmp_path):
    """Why jobs.yaml gives no --name: RQ refuses a second live worker under a taken name."""
    env, log = env_for(redis_db.url, tmp_path), tmp_path / "fixed.log"
    connection = redis_db.client()
    first = start_loop(env, log, "--name", "toolforge-worker")
    try:
        wait_for(lambda: [w.name for w in registered(connection)] == ["toolforge-worker"], "the first worker")
        second = start_loop(env, log, "--name", "toolforge-worker")
        assert second.wait(60) != 0
        assert "There exists an active worker named 'toolforge-worker' already" in log.read_text()
    finally:
        stop(first)


def beat(worker: Worker, seconds_ago: float) -> None:
    then = datetime.now(UTC) - timedelta(seconds=seconds_ago)
    worker.connection.hset(worker.key, "last_heartbeat", utcformat(then))


def test_worker_probe_reads_the_heartbeat_of_this_host_s_worker(redis_db):
    connection = redis_db.client()
    worker = Worker([Queue(QUEUE, connection=connection)], connection=connection, name="pod-a.1")
    worker.register_birth()
    Worker([Queue(QUEUE, connection=connection)], connection=connection, name="pod-b.1").register_birth()

    fresh = probe_worker(connection, QUEUE, "pod-a.", max_age_s=180, age_s=None, grace_s=0)
    assert fresh.alive and "pod-a.1" in fresh.reason

    beat(worker, 400)
    stale = probe_worker(connection, QUEUE, "pod-a.", max_age_s=180, age_s=None, grace_s=0)
    assert not stale.alive and "last heartbeat 400 s ago" in stale.reason
    # another pod's healthy worker does not vouch for this one
    assert probe_worker(connection, QUEUE, "pod-b.", 180, None, 0).alive

    missing = probe_worker(connection, QUEUE, "pod-c.", 180, age_s=None, grace_s=600)
    assert not missing.alive and "no worker pod-c.*" in missing.reason
    assert probe_worker(connection, QUEUE, "pod-c.", 180, age_s=30, grace_s=600).alive  # still loading
    assert not probe_worker(connection, QUEUE, "pod-c.", 180, age_s=601, grace_s=600).alive


def test_worker_probe_passes_while_redis_is_unreachable():
    closed = redis.Redis(port=free_port(), socket_connect_timeout=1)
    result = probe_worker(closed, QUEUE, "pod-a.", 180, age_s=None, grace_s=0)
    assert result.alive and "Redis unreachable" in result.reason


def test_a_scorer_heartbeats_for_the_probe_and_systemd_and_leaves_when_stopped(redis_db, tmp_path, monkeypatch):
    """``side-worker --role scorer``'s loop (the models are not needed while the stream is empty)."""
    env, key = env_for(redis_db.url, tmp_path), stream_key(ServiceConfig(queue=QUEUE))
    systemd = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    systemd.bind(str(tmp_path / "notify"))
    systemd.settimeout(60)
    monkeypatch.setenv("NOTIFY_SOCKET", str(tmp_path / "notify"))
    with systemd:
        scorer_under_systemd(redis_db, env, key, systemd, Store.open(f"sqlite:///{tmp_path / 'side.sqlite3'}"))
    assert scorer_beats(redis_db.client(), key) == {}  # a scorer stopped on purpose is not missed
    gone = run_probe("workers.probe", env, "--role", "scorer", "--name", "gpuhost-scorer", "--grace", "0")
    assert gone.returncode == 1 and gone.stdout.startswith("NOT alive: no scorer gpuhost-scorer*"), gone.stdout


def scorer_under_systemd(redis_db, env: dict[str, str], key: str, systemd: socket.socket, store: Store) -> None:
    """Run a scorer's loop, probe it, stop it; ``systemd`` must hear it start, beat and stop."""
    scorer = Scorer(redis_db.client(), key, "gpuhost-scorer0", WorkerContext(store, None), heartbeat_s=0.2)
    loop = threading.Thread(target=scorer.run)
    loop.start()
    try:
        assert systemd.recv(64) == b"READY=1" and systemd.recv(64) == b"WATCHDOG=1"
        wait_for(lambda: "gpuhost-scorer0" in scorer_beats(redis_db.client(), key), "the scorer's heartbeat")
        alive = run_probe("workers.probe", env, "--role", "scorer", "--name", "gpuhost-scorer", "--grace", "0")
        assert alive.returncode == 0 and alive.stdout.startswith("alive: scorer gpuhost-scorer0 "), alive.stdout
        other = run_probe("workers.probe", env, "--role", "scorer", "--name", "otherhost-", "--grace", "0")
        assert other.returncode == 1 and "no scorer otherhost-*" in other.stdout, other.stdout + other.stderr
    finally:
        scorer.stop.set()
        loop.join(30)
        store.close()
    assert not loop.is_alive() and b"STOPPING=1" in iter_datagrams(systemd)


def iter_datagrams(sock: socket.socket) -> list[bytes]:
    sock.settimeout(0)
    out = []
    while True:
        try:
            out.append(sock.recv(64))
        except BlockingIOError:
            return out


def test_a_scorer_keeps_beating_while_it_scores_a_batch(redis_db):
    key = stream_key(ServiceConfig(queue=QUEUE))
    scorer = Scorer(redis_db.client(), key, "gpuhost-scorer1", WorkerContext(None, None), heartbeat_s=0.1)
    scorer.beat()
    first = scorer_beats(redis_db.client(), key)["gpuhost-scorer1"]
    with scorer._beating():  # the loop is busy in the models: only the thread beats
        wait_for(lambda: scorer_beats(redis_db.client(), key)["gpuhost-scorer1"] > first, "a beat during the batch")


def test_scorer_probe_reads_the_heartbeat_of_the_named_scorer(redis_db):
    connection, key = redis_db.client(), stream_key(ServiceConfig(queue=QUEUE))
    beat_scorer(connection, key, "gpu-a-scorer0", now=10_000.0)
    beat_scorer(connection, key, "gpu-b-scorer0", now=10_300.0)
    fresh = probe_scorer(connection, key, "gpu-a-", max_age_s=180, age_s=None, grace_s=0, now=10_100.0)
    assert fresh.alive and "gpu-a-scorer0" in fresh.reason and "100 s ago" in fresh.reason
    stale = probe_scorer(connection, key, "gpu-a-", 180, age_s=None, grace_s=0, now=10_400.0)
    assert not stale.alive and "last heartbeat 400 s ago" in stale.reason
    assert probe_scorer(connection, key, "gpu-b-", 180, age_s=None, grace_s=0, now=10_400.0).alive
    assert probe_scorer(connection, key, "gpu-c-", 180, age_s=30, grace_s=600).alive  # still loading the models
    assert not probe_scorer(connection, key, "gpu-c-", 180, age_s=601, grace_s=600).alive
    closed = redis.Redis(port=free_port(), socket_connect_timeout=1)
    assert probe_scorer(closed, key, "gpu-a-", 180, age_s=None, grace_s=0).alive  # it waits for Redis
    beat_scorer(connection, key, "gpu-b-scorer0", now=10_300.0 + 86_401)  # a day on: dead names are dropped
    assert list(scorer_beats(connection, key)) == ["gpu-b-scorer0"]


def test_bot_probe_watches_the_checkpoint_the_bot_writes(tmp_path):
    config_file = tmp_path / "side.toml"
    config_file.write_text(f'var_dir = "{tmp_path / "var"}"\n[bot]\nwiki = "testwiki"\n')
    env = {**os.environ, "SIDE_CONFIG": str(config_file)}
    path = checkpoint_path("", "testwiki", tmp_path / "var")

    missing = run_probe("bot.probe", env, "--grace", "0")
    assert missing.returncode == 1 and f"no checkpoint at {path}" in missing.stdout

    CheckpointFile(path).save(Checkpoint("testwiki", Position("2026-11-22T16:28:07Z", 7)))
    fresh = run_probe("bot.probe", env, "--grace", "0")
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr

    old = time.time() - 1000
    os.utime(path, (old, old))
    stale = run_probe("bot.probe", env, "--grace", "0", "--max-age", "900")
    age = re.search(r"not written for (\d+) s", stale.stdout)
    assert stale.returncode == 1 and age and 1000 <= int(age.group(1)) < 1100, stale.stdout  # the probe's own start-up
    assert probe_bot(path, 900, age_s=60, grace_s=300).alive  # a fresh container is starting
    assert not probe_bot(path, 900, age_s=301, grace_s=300).alive


def test_probes_refuse_a_bad_configuration_with_one_line(tmp_path):
    env = {**os.environ, "SIDE_CONFIG": str(tmp_path / "side.toml")}
    (tmp_path / "side.toml").write_text("[service]\nno_such_setting = 1\n")
    for module in ("workers.probe", "bot.probe"):
        done = run_probe(module, env)
        assert done.returncode == 2 and done.stderr.count("\n") == 1 and "unknown setting" in done.stderr


def test_container_age_comes_from_pid_1(tmp_path):
    ticks = os.sysconf("SC_CLK_TCK")
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "stat").write_text(f"1 (side worker) S 0 1 1 0 -1 4194560 {' '.join(['0'] * 12)} "
                                         f"{900 * ticks} 0 0\n")
    (tmp_path / "uptime").write_text("1000.00 4000.00\n")
    assert container_age_s(tmp_path) == pytest.approx(1000.0 - 900)
    assert container_age_s(tmp_path / "nowhere") is None
    if Path("/proc/1/stat").is_file():
        assert container_age_s() >= 0

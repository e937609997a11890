"""The restart policy of ``side-stack``'s supervision: backoff, the bound, and what is published.

The real kill -9 of a worker under the running stack is in tests/test_workers_stack.py; here
the policy's arithmetic and the Redis round trip of the published state are checked quickly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import redis

from service.supervision import SlotState, publish_workers, supervised_workers, unpublish_workers
from workers.supervise import RestartPolicy, WorkerSlot, exit_description


def test_backoff_doubles_up_to_its_ceiling():
    policy = RestartPolicy(initial_delay_s=1, max_delay_s=10, max_restarts=10, window_s=600)
    assert [policy.delay_s(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


def test_a_slot_that_keeps_dying_is_given_up_on():
    policy = RestartPolicy(initial_delay_s=1, max_delay_s=60, max_restarts=3, window_s=600)
    slot = WorkerSlot(1)
    slot.started("w1", 100, registered=True)
    waits = []
    for n in range(3):
        slot.exited(-signal.SIGKILL, policy, now=1000.0 + n)
        assert slot.state == SlotState.BACKOFF and not slot.due(now=1000.0 + n)
        waits.append(slot.next_start_mono - (1000.0 + n))
        assert slot.due(now=slot.next_start_mono)
    assert waits == [1, 2, 4]
    slot.exited(2, policy, now=1004.0)
    assert slot.state == SlotState.GAVE_UP and not slot.due(now=10**9)
    assert slot.last_exit_status == 2 and slot.pid is None


def test_exits_outside_the_window_are_forgiven():
    policy = RestartPolicy(initial_delay_s=1, max_delay_s=60, max_restarts=2, window_s=100)
    slot = WorkerSlot(1)
    for when in (0.0, 50.0, 200.0, 260.0):  # never more than two within 100 s
        slot.exited(-9, policy, now=when)
        assert slot.state == SlotState.BACKOFF
    assert slot.next_start_mono == 260.0 + 2


def test_exit_descriptions():
    assert exit_description(-signal.SIGKILL) == "signal SIGKILL"
    assert exit_description(2) == "status 2"
    assert exit_description(None) == "no status"


def test_published_state_round_trips_through_redis(redis_db):
    client = redis.Redis.from_url(redis_db.url)
    slot = WorkerSlot(1)
    slot.started("stack-1-1", 4242, registered=True)
    slot.exited(-9, RestartPolicy())
    published = slot.record("host:1")
    publish_workers(client, "side-test", [published])
    [back] = supervised_workers(client, "side-test")
    assert back == published
    assert (back.state, back.restarts, back.last_exit_status, back.pid) == (SlotState.BACKOFF, 0, -9, None)
    assert back.next_start_at and back.last_exit_at
    assert 0 < client.ttl("side:supervisor:side-test") <= 30
    unpublish_workers(client, "side-test", [published])
    assert supervised_workers(client, "side-test") == []
    assert supervised_workers(client, "other-queue") == []


def test_a_worker_that_crashes_in_native_code_logs_its_python_stack():
    """What a side-worker does first: a crash in C code (here a read of address 0) prints the
    Python stack of every thread to stderr, which is the worker's log, before the process dies."""
    code = ("import ctypes\nfrom workers.worker import trace_native_crashes\ntrace_native_crashes()\n"
            "ctypes.string_at(0)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}  # off unless the worker turns it on
    crashed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False,
                             env=env)
    assert crashed.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in crashed.stderr
    assert 'File "<string>", line 4 in <module>' in crashed.stderr, crashed.stderr

"""The web service's rate-limit counters live under the tool's secret Redis key prefix.

On Toolforge's shared Redis every key of Side must sit under ``RQ_KEY_PREFIX`` (a secret
random prefix), so that other tools neither see nor collide with them. RQ reads the prefix
when it is imported, so the app runs in a child process with its own prefix; the test then
reads the real Redis the child wrote to.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys

from side.config import REPO_ROOT

#: Three POSTs from one client against a limit of two per minute: the third is refused.
CLIENT = """
import json, sys
from pathlib import Path
sys.path.insert(0, "tests")
from webapp import claims_body, make_config, running_app
with running_app(make_config(Path(sys.argv[2]), sys.argv[1], rate_limit="2/minute")) as app:
    client = app.test_client()
    codes = [client.post("/api/v1/checks", json=claims_body(revision=n),
                         environ_base={"REMOTE_ADDR": "192.0.2.7"}).status_code for n in range(3)]
print(json.dumps(codes))
"""


def test_rate_limit_counters_are_under_the_secret_key_prefix(redis_db, tmp_path):
    prefix = f"side-{secrets.token_hex(8)}"
    done = subprocess.run([sys.executable, "-c", CLIENT, redis_db.url, str(tmp_path)], cwd=REPO_ROOT,
                          env={**os.environ, "RQ_KEY_PREFIX": prefix}, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [202, 202, 429]

    keys = sorted(k.decode() for k in redis_db.client().keys("*"))
    limits = [k for k in keys if k.startswith(f"{prefix}:side:limits:")]
    assert limits and all("192.0.2.7" in k for k in limits), keys
    assert any(k.startswith(f"{prefix}:queue:") for k in keys), keys  # RQ's own keys, for comparison
    assert [k for k in keys if not k.startswith(f"{prefix}:")] == []

"""Shared fixtures.

Tests that need the real shared data use the ``data_dir`` fixture: outside CI they skip with
the reason, in CI (``CI=true``) a missing folder is a failure, because CI must measure them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# pywikibot keeps logs, cookies and throttle files in its base dir, which defaults to the working
# directory: give every test session its own, before any test imports pywikibot. pywikibot takes
# PYWIKIBOT_DIR only when a user-config.py is there, so an empty one is written.
if "PYWIKIBOT_DIR" not in os.environ:
    os.environ["PYWIKIBOT_DIR"] = tempfile.mkdtemp(prefix="side-pywikibot-")
    (Path(os.environ["PYWIKIBOT_DIR"]) / "user-config.py").write_text("# tests: pywikibot's defaults\n")
os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")
# No Wayback Machine lookups for dead sources unless a test points them at its local stand-in
# (tests/wayback.py): test traffic stays on 127.0.0.1. Subprocess stacks inherit this.
os.environ.setdefault("SIDE_FETCH_WAYBACK_API", "")

from side.config import DEFAULT_DATA_DIR

#: Real components the service, bot and gadget tests start on 127.0.0.1 (one module each).
pytest_plugins = ["harness.redis", "harness.mariadb", "harness.stack", "harness.mediawiki", "harness.browser",
                  "harness.llm", "webapp"]

IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def shared_data_dir() -> Path:
    return Path(os.environ.get("SIDE_DATA_DIR", DEFAULT_DATA_DIR))


def need_data(relative: str) -> Path:
    """Path of a shared data file or folder; skip (locally) or fail (CI) when it is missing."""
    path = shared_data_dir() / relative
    if not path.exists():
        message = f"shared data missing: {path} (set SIDE_DATA_DIR to ../shared/data)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def data_dir() -> Path:
    return need_data("")


@pytest.fixture(scope="session")
def exported(tmp_path_factory) -> Path:
    """The shipped verifier as `side export hf` writes it (once per run; tests only read it)."""
    from side.cli import main

    directory = tmp_path_factory.mktemp("export") / "side-verifier"
    assert main(["export", "hf", str(directory)]) == 0
    return directory


@pytest.fixture(scope="session")
def fp32_cross_encoder():
    """The shipped cross-encoder in fp32 on the CPU, the reference the exported copy is compared with."""
    from side.verify.crossencoder import CrossEncoder

    return CrossEncoder(device="cpu", precision="fp32")

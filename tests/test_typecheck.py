"""The core library passes mypy with the strictness stated in pyproject.toml ``[tool.mypy]``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_mypy_is_clean():
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.fail("mypy is not installed (it is in the dev extra: pip install -e '.[dev]')")
    # No arguments: the files and settings come from pyproject.toml, as a developer runs it.
    # No cache: a stale one from another checkout must not hide (or invent) an error.
    out = subprocess.run([mypy, "--no-incremental", "--cache-dir", "/dev/null"], check=False, cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

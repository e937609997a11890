"""The Python code passes the project's ruff rules (pyproject.toml), as it does in review."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.fail("ruff is not installed (it is in the dev extra: pip install -e '.[dev]')")
    out = subprocess.run([ruff, "check", "--output-format", "concise", "."], check=False, cwd=REPO,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr

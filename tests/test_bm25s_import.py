"""bm25s is imported without JAX, so a GPU host's JAX never takes the GPU from the workers.

Where JAX is installed, bm25s runs a JAX computation at import time, and JAX's first computation
reserves most of a GPU's memory for the process. Each case runs in a fresh interpreter with a
stand-in ``jax`` package on its path that records being imported and fails if asked to compute,
so it shows what bm25s would do on such a host.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def jax_installed(tmp_path) -> dict[str, str]:
    """The environment of a process on whose path a stand-in ``jax`` is installed."""
    package = tmp_path / "site" / "jax"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("import os\nos.environ['STAND_IN_JAX_IMPORTED'] = '1'\n")
    (package / "lax.py").write_text("def top_k(values, k):\n    raise RuntimeError('JAX was asked to compute')\n")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}


def run(code: str, env: dict[str, str]) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bm25s_is_imported_without_jax_and_ranks_with_numpy(jax_installed):
    out = run("import os\n"
              "from side.retrieval.sparse import quiet_bm25s\n"
              "bm25s = quiet_bm25s()\n"
              "import bm25s.selection as s\n"
              "print(s.JAX_IS_AVAILABLE, os.environ.get('STAND_IN_JAX_IMPORTED', '0'))\n"
              "r = bm25s.BM25(); r.index(bm25s.tokenize(['a tower in paris', 'a river'], show_progress=False),"
              " show_progress=False)\n"
              "print(r.retrieve(bm25s.tokenize(['tower'], show_progress=False), k=1, show_progress=False)[0][0][0])\n",
              jax_installed)
    assert out == ["False", "0", "0"]


def test_jax_stays_importable_for_the_rest_of_the_process(jax_installed):
    out = run("import os\n"
              "from side.retrieval.sparse import quiet_bm25s\n"
              "quiet_bm25s()\n"
              "import jax\n"
              "print(os.environ['STAND_IN_JAX_IMPORTED'])\n", jax_installed)
    assert out == ["1"]


def test_the_stand_in_is_what_bm25s_would_run_on_such_a_host(jax_installed):
    """Without Side's guard, bm25s's import would run JAX (here: fail on the stand-in's compute)."""
    done = subprocess.run([sys.executable, "-c", "import bm25s"], env=jax_installed, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode != 0 and "JAX was asked to compute" in done.stderr

"""A core-only install: every command that needs an extra says which, in one line, exit 2.

Each console script of pyproject.toml (and the ``side`` commands that read the results store)
runs in a fresh interpreter where the extras' libraries cannot be imported, as after
``pip install side-citations`` alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest

from side.config import REPO_ROOT
from side.extras import DISTRIBUTION, EXTRA_MODULES, extra_of, install_command

PROJECT = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
SCRIPTS = PROJECT["scripts"]
#: What each service script needs.
NEEDS = {"side-worker": "service", "side-stack": "service", "side-web": "service", "side-feedback": "service",
         "side-bot": "bot"}

#: Makes every library of the service and bot extras unimportable, then runs ``target`` (module:function).
RUNNER = """
import importlib, sys
from importlib.abc import MetaPathFinder

BLOCKED = set(sys.argv[1].split(","))

class NotInstalled(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
module, function = sys.argv[2].split(":")
sys.argv = [sys.argv[3], *sys.argv[4:]]
sys.exit(getattr(importlib.import_module(module), function)())
"""


def run_core_only(target: str, prog: str, *args: str, tmp_path) -> subprocess.CompletedProcess:
    blocked = ",".join(sorted(set(EXTRA_MODULES["bot"])))
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "SIDE_VAR_DIR": str(tmp_path / "var")}
    return subprocess.run([sys.executable, "-c", RUNNER, blocked, target, prog, *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_distribution_name_is_the_one_the_extras_refer_to():
    assert PROJECT["name"] == DISTRIBUTION
    assert set(SCRIPTS) == {"side", *NEEDS}
    for extra in ("bot", "dev"):
        assert any(r.startswith(f"{DISTRIBUTION}[") for r in PROJECT["optional-dependencies"][extra])


@pytest.mark.parametrize("prog", sorted(NEEDS))
def test_a_service_script_without_its_extra_says_which_in_one_line(prog, tmp_path):
    done = run_core_only(SCRIPTS[prog], prog, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"{prog}: error: ")
    assert install_command(NEEDS[prog]) in lines[0]
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.parametrize("args", [["feedback", "export"], ["calibrate", "--from-store"]],
                         ids=["feedback-export", "calibrate-from-store"])
def test_side_commands_that_read_the_store_name_the_service_extra(args, tmp_path):
    done = run_core_only(SCRIPTS["side"], "side", *args, tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith(("INFO ", "DEBUG "))]
    assert lines == [lines[0]] and lines[0].startswith("side: error: "), done.stderr
    assert install_command("service") in lines[0]


def test_an_import_error_outside_the_extras_is_not_blamed_on_them():
    assert extra_of(ModuleNotFoundError("x", name="pywikibot.site")) == "bot"
    assert extra_of(ModuleNotFoundError("x", name="redis"), "bot") == "bot"
    assert extra_of(ModuleNotFoundError("x", name="redis")) == "service"
    assert extra_of(ModuleNotFoundError("x", name="numpy")) is None


def test_a_plugin_that_two_installs_register_is_added_once(tmp_path):
    """An older install of the project (under its former name) beside the current one declares the
    same ``side.commands`` plugin: ``side`` still starts, with the command once."""
    older = tmp_path / "side-0.1.0.dist-info"
    older.mkdir()
    (older / "METADATA").write_text("Metadata-Version: 2.1\nName: side\nVersion: 0.1.0\n")
    (older / "entry_points.txt").write_text("[side.commands]\nfeedback = service.cli:register\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(tmp_path)])}
    done = subprocess.run([sys.executable, "-m", "side", "feedback", "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "export" in done.stdout and "Traceback" not in done.stderr

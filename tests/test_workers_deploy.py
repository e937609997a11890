"""deploy/: the Toolforge and systemd files parse and point at entry points that exist."""

from __future__ import annotations

import ast
import configparser
import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from side.config import REPO_ROOT

DEPLOY = REPO_ROOT / "deploy"
SCRIPTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
UNITS = sorted((DEPLOY / "selfhosted").glob("*.service"))


def test_jobs_yaml_runs_the_worker_and_the_bot_as_continuous_jobs():
    jobs = yaml.safe_load((DEPLOY / "toolforge" / "jobs.yaml").read_text())
    by_name = {job["name"]: job for job in jobs}
    assert set(by_name) == {"side-worker", "side-bot"}
    for job in jobs:
        assert job["continuous"] is True and job["image"] == "python3.11"
        assert set(job) <= {"name", "image", "command", "continuous", "cpu", "mem", "emails", "filelog-stdout",
                            "filelog-stderr", "replicas", "mount", "health-check-script", "port"}
        program = Path(job["command"].split()[0]).name
        assert program in SCRIPTS, f"{program} is not a console script of pyproject.toml"


def test_service_template_is_a_python311_kubernetes_webservice():
    template = yaml.safe_load((DEPLOY / "toolforge" / "service.template").read_text())
    assert template["backend"] == "kubernetes" and template["type"] == "python3.11"
    assert template["health-check-path"] == "/healthz"


def test_toolforge_app_exposes_the_web_service_wsgi_app():
    tree = ast.parse((DEPLOY / "toolforge" / "app.py").read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [(i.module, [a.name for a in i.names]) for i in imports] == [("gadget.server.wsgi", ["app"])]
    assert (REPO_ROOT / "gadget" / "server" / "wsgi.py").is_file()


def test_toolinfo_has_the_required_fields():
    info = json.loads((DEPLOY / "toolforge" / "toolinfo.json").read_text())
    for key in ("name", "title", "description", "url", "license", "repository", "tool_type"):
        assert isinstance(info[key], str) and info[key], key
    assert info["url"].startswith("https://") and info["name"] == "side"


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_systemd_units_have_the_usual_sections(unit):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(unit.read_text())
    assert {"Unit", "Service", "Install"} <= set(parser.sections())
    assert parser["Service"]["Restart"] == "always"
    program = Path(parser["Service"]["ExecStart"].split()[0]).name
    assert program in SCRIPTS or program in {"redis-server", "ssh"}


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_systemd_units_pass_systemd_analyze(tmp_path):
    for unit in UNITS:  # instances of templates need a name to be verified
        shutil.copy(unit, tmp_path / unit.name.replace("@.service", "@0.service"))
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *sorted(map(str, tmp_path.iterdir()))],
                          capture_output=True, text=True, check=False)
    # Only the programs of the target host (/opt/side/.venv) are missing here; syntax errors would show.
    problems = [line for line in done.stderr.splitlines() if line.strip() and "is not executable" not in line]
    assert problems == []


def test_redis_conf_keeps_every_job():
    settings = dict(line.split(None, 1) for line in (DEPLOY / "selfhosted" / "redis.conf").read_text().splitlines()
                    if line.strip() and not line.startswith("#"))
    assert settings["appendonly"] == "yes" and settings["maxmemory-policy"] == "noeviction"
    assert settings["bind"].startswith("127.0.0.1")

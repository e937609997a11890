"""deploy/: the Toolforge and systemd files parse and point at entry points that exist."""

from __future__ import annotations

import ast
import configparser
import importlib
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from bot.sidebot import apply_options, parse_options
from side.config import DEFAULT_USER_AGENT, REPO_ROOT, load_config
from side.errors import ConfigError
from workers.probe import DEFAULT_MAX_AGE_S
from workers.probe import build_parser as probe_parser
from workers.worker import build_parser as worker_parser

DEPLOY = REPO_ROOT / "deploy"
SCRIPTS = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
UNITS = sorted((DEPLOY / "selfhosted").glob("*.service"))
#: Where bootstrap.sh puts the venv every job runs from.
VENV_BIN = "$HOME/www/python/venv/bin/"


def load_jobs() -> dict[str, dict]:
    return {job["name"]: job for job in yaml.safe_load((DEPLOY / "toolforge" / "jobs.yaml").read_text())}


def test_jobs_yaml_runs_the_workers_and_the_bot_as_continuous_jobs():
    jobs = load_jobs()
    assert set(jobs) == {"side-worker", "side-reader", "side-ingest", "side-bot"}
    ingest = worker_parser().parse_args(shlex.split(jobs["side-ingest"]["command"])[1:])
    assert ingest.ingest and ingest.name is None
    reader = worker_parser().parse_args(shlex.split(jobs["side-reader"]["command"])[1:])
    assert reader.role == "reader" and reader.name is None  # one name per replica
    for job in jobs.values():
        assert job["continuous"] is True and job["image"] == "python3.11"
        assert set(job) <= {"name", "image", "command", "continuous", "cpu", "mem", "emails", "filelog",
                            "filelog-stdout", "filelog-stderr", "replicas", "mount", "health-check-script",
                            "port"}
        program = Path(job["command"].split()[0]).name
        assert program in SCRIPTS, f"{program} is not a console script of pyproject.toml"


def test_jobs_with_log_paths_turn_file_logging_on():
    """Toolforge writes filelog-stdout/-stderr only for jobs with ``filelog: true``."""
    with_paths = [job for job in load_jobs().values() if {"filelog-stdout", "filelog-stderr"} & set(job)]
    assert with_paths
    assert [job.get("filelog") for job in with_paths] == [True] * len(with_paths), with_paths


def test_the_worker_job_leaves_the_worker_name_to_each_replica():
    """A fixed --name lets one worker run: RQ refuses a second live worker of that name."""
    argv = shlex.split(load_jobs()["side-worker"]["command"])
    assert Path(argv[0]).name == "side-worker"
    assert worker_parser().parse_args(argv[1:]).name is None


def test_every_continuous_job_has_a_health_check_that_runs_a_probe():
    for job in load_jobs().values():
        argv = shlex.split(job["health-check-script"])
        assert argv[:2] == [VENV_BIN + "python", "-m"], job["name"]
        probe = importlib.import_module(argv[2])
        probe.build_parser().parse_args(argv[3:])  # options it really has (exits 2 otherwise)
        assert callable(probe.main)
    assert shlex.split(load_jobs()["side-worker"]["health-check-script"])[2] == "workers.probe"
    assert shlex.split(load_jobs()["side-bot"]["health-check-script"])[2] == "bot.probe"


def test_the_bot_job_is_a_dry_run_whatever_side_toml_says(tmp_path):
    """As jobs.yaml's comment says: only -post on the command line makes the bot post."""
    argv = shlex.split(load_jobs()["side-bot"]["command"])
    assert "-post" not in argv
    (tmp_path / "side.toml").write_text("[bot]\ndry_run = false\n")
    config = load_config(tmp_path / "side.toml", environ={})
    assert config.bot.dry_run is False
    assert apply_options(config, parse_options(argv[1:])).bot.dry_run is True
    assert apply_options(config, parse_options([*argv[1:], "-post"])).bot.dry_run is False


def test_service_template_is_a_python311_kubernetes_webservice():
    template = yaml.safe_load((DEPLOY / "toolforge" / "service.template").read_text())
    assert template["backend"] == "kubernetes" and template["type"] == "python3.11"
    assert template["health-check-path"] == "/healthz"


def test_toolforge_app_exposes_the_web_service_wsgi_app():
    tree = ast.parse((DEPLOY / "toolforge" / "app.py").read_text())
    imports = [node for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert [(i.module, [a.name for a in i.names]) for i in imports] == [("gadget.server.wsgi", ["app"])]
    assert (REPO_ROOT / "gadget" / "server" / "wsgi.py").is_file()


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_systemd_units_have_the_usual_sections(unit):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string(unit.read_text())
    assert {"Unit", "Service", "Install"} <= set(parser.sections())
    assert parser["Service"]["Restart"] == "always"
    program = Path(parser["Service"]["ExecStart"].split()[0]).name
    assert program in SCRIPTS or program in {"redis-server", "ssh", "vllm"}


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


def unit_table() -> dict[str, str]:
    """The unit table of deploy/selfhosted/README.md: each unit file named in a row, with the row."""
    rows = {}
    for line in (DEPLOY / "selfhosted" / "README.md").read_text().splitlines():
        if line.startswith("| `"):
            for name in line.split("|")[1].replace("`", "").replace("+", " ").split():
                rows[name] = line
    return rows


def test_kubernetes_variables_for_the_tools_webservice_are_not_settings(tmp_path):
    """In a Toolforge tool named side, Kubernetes gives every job and the webservice variables
    for the webservice's Service (named side, its port named http); on Lift Wing, for a Service
    named side-verifier-predictor. They neither set service.host and service.port nor stop every
    command as a misspelt setting. The same names set by a person, without Kubernetes'
    <NAME>_PORT beside them, are still read (or refused) as before."""
    (tmp_path / "side.toml").write_text("")
    links = {"SIDE_SERVICE_HOST": "10.97.3.4", "SIDE_SERVICE_PORT": "8000", "SIDE_SERVICE_PORT_HTTP": "8000",
             "SIDE_PORT": "tcp://10.97.3.4:8000", "SIDE_PORT_8000_TCP": "tcp://10.97.3.4:8000",
             "SIDE_PORT_8000_TCP_PROTO": "tcp", "SIDE_PORT_8000_TCP_PORT": "8000",
             "SIDE_PORT_8000_TCP_ADDR": "10.97.3.4"}
    base = {"SIDE_CONFIG": str(tmp_path / "side.toml"), "KUBERNETES_SERVICE_HOST": "10.96.0.1"}
    config = load_config(None, environ={**base, **links, "SIDE_SERVICE_THREADS": "3"})
    defaults = load_config(None, environ=base)
    assert (config.service.host, config.service.port) == (defaults.service.host, defaults.service.port)
    assert config.service.threads == 3
    assert load_config(None, environ={**base, "SIDE_SERVICE_PORT": "9000"}).service.port == 9000
    with pytest.raises(ConfigError, match="SIDE_SERVICE_PORT_HTTP names no setting"):
        load_config(None, environ={**base, "SIDE_SERVICE_PORT_HTTP": "8000"})
    with pytest.raises(ConfigError, match="SIDE_SERVICE_PORT_HTTP names no setting"):  # SIDE_PORT names another port
        load_config(None, environ={**base, **links, "SIDE_PORT": "tcp://10.97.3.4:9999"})
    # a Service named side-verifier-predictor (Lift Wing): its variables fall under [verifier]'s prefix
    predictor = {"SIDE_VERIFIER_PREDICTOR_SERVICE_HOST": "fd00::5", "SIDE_VERIFIER_PREDICTOR_SERVICE_PORT": "80",
                 "SIDE_VERIFIER_PREDICTOR_SERVICE_PORT_HTTP": "80", "SIDE_VERIFIER_PREDICTOR_PORT": "tcp://[fd00::5]:80",
                 "SIDE_VERIFIER_PREDICTOR_PORT_80_TCP_ADDR": "fd00::5"}
    assert load_config(None, environ={**base, **predictor, "SIDE_VERIFIER_THREADS": "2"}).verifier.threads == 2
    with pytest.raises(ConfigError, match="SIDE_VERIFIER_PREDICTOR_SERVICE_HOST names no setting of \\[verifier\\]"):
        load_config(None, environ={**base, "SIDE_VERIFIER_PREDICTOR_SERVICE_HOST": "fd00::5"})


def test_the_selfhosted_environment_loads_and_names_a_contact(tmp_path):
    """side.env.example, as systemd reads it (KEY=rest of the line), is a valid configuration
    whose User-Agent is not the built-in one, which names no contact."""
    environ = dict(line.split("=", 1) for line in (DEPLOY / "selfhosted" / "side.env.example").read_text().splitlines()
                   if line.strip() and not line.startswith("#"))
    (tmp_path / "side.toml").write_text("")
    config = load_config(None, environ={**environ, "SIDE_CONFIG": str(tmp_path / "side.toml")})
    assert config.fetch.user_agent == environ["SIDE_FETCH_USER_AGENT"] != DEFAULT_USER_AGENT
    assert config.fetch.user_agent.startswith("SideBot/") and "@" in config.fetch.user_agent


def test_the_selfhosted_readme_has_a_row_for_every_unit():
    table = unit_table()
    assert sorted(unit.name for unit in UNITS if unit.name not in table) == []


@pytest.mark.parametrize("unit, role, probe", [("side-reader@.service", "reader", "workers.probe --name"),
                                               ("side-scorer@.service", "scorer", "workers.probe --role scorer")])
def test_the_readme_rows_of_the_split_units_say_what_they_run_and_how_they_are_probed(unit, role, probe):
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.read_string((DEPLOY / "selfhosted" / unit).read_text())
    assert worker_parser().parse_args(shlex.split(parser["Service"]["ExecStart"])[1:]).role == role
    row = unit_table()[unit]
    assert f"side-worker --role {role}" in row and probe in row and "/healthz" in row


def test_the_scorer_unit_is_watched_by_the_heartbeat_it_writes():
    """side-scorer@ reports ready after loading the models and pings systemd's watchdog with each
    heartbeat (workers/scorer.py), which the probe's --role scorer reads in Redis too."""
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read_string((DEPLOY / "selfhosted" / "side-scorer@.service").read_text())
    service = parser["Service"]
    assert (service["Type"], service["NotifyAccess"]) == ("notify", "main")
    args = worker_parser().parse_args(shlex.split(service["ExecStart"])[1:])
    assert args.role == "scorer"
    assert int(service["WatchdogSec"]) >= 3 * args.heartbeat  # a missed beat or two is no restart
    assert probe_parser().parse_args(["--role", "scorer", "--name", "host-scorer0"]).role == "scorer"
    assert int(service["WatchdogSec"]) == DEFAULT_MAX_AGE_S

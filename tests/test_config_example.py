"""``side.toml.example``, the documented configuration the README points to, stays true to side/config.py.

Loaded as a real configuration file it must give exactly the defaults, and it must name every
setting (a new setting without its line in the example fails here).
"""

from __future__ import annotations

import dataclasses
import logging
import re
from pathlib import Path

import pytest

from side import config as side_config
from side.config import DEFAULT_USER_AGENT, Config, FetchConfig, load_config
from side.errors import SourceBlockedError
from side.sources.fetch import download

EXAMPLE = Path(__file__).resolve().parent.parent / "side.toml.example"


def setting_names(config: object, prefix: str = "") -> list[str]:
    names = []
    for f in dataclasses.fields(config):  # type: ignore[arg-type]
        value = getattr(config, f.name)
        names += setting_names(value, f"{f.name}.") if dataclasses.is_dataclass(value) else [prefix + f.name]
    return names


def test_the_example_loads_to_the_defaults():
    loaded = load_config(EXAMPLE, environ={})
    assert dataclasses.asdict(loaded) == dataclasses.asdict(Config())


def test_the_example_names_every_setting_under_its_section():
    sections: dict[str, str] = {}
    section = ""
    for line in EXAMPLE.read_text(encoding="utf-8").splitlines():
        if match := re.match(r"^\[([a-z_.]+)\]$", line):
            section, _, table = match.group(1).partition(".")
            if table:  # a table setting written as its own TOML table, e.g. [bot.backlog_categories]
                sections[match.group(1)] = line
        elif match := re.match(r"^#? ?([a-z0-9_]+) =", line):
            sections.setdefault(f"{section}.{match.group(1)}" if section else match.group(1), line)
        else:  # a secret, named by its environment variable only
            for match in re.finditer(r"SIDE_([A-Z]+)_([A-Z_]+) \(", line):
                sections.setdefault(f"{match.group(1).lower()}.{match.group(2).lower()}", line)
    missing = [name for name in setting_names(Config()) if name not in sections]
    assert missing == []


def test_the_toolforge_guide_writes_a_config_that_loads_and_names_a_contact(tmp_path):
    """The side.toml the Toolforge guide writes is a valid configuration, and the User-Agent it
    gives names the tool and its maintainers, as Wikimedia's User-Agent policy asks, instead of
    the default's."""
    guide = (EXAMPLE.parent / "deploy" / "toolforge" / "README.md").read_text(encoding="utf-8")
    written = re.findall(r"cat > \$HOME/side\.toml <<'TOML'\n(.*?)\nTOML\n", guide, flags=re.DOTALL)
    assert len(written) == 1
    (tmp_path / "side.toml").write_text(written[0] + "\n", encoding="utf-8")
    loaded = load_config(tmp_path / "side.toml", environ={})
    assert loaded.bot.wiki == "enwiki"
    assert loaded.fetch.user_agent != Config().fetch.user_agent
    assert "side.toolforge.org" in loaded.fetch.user_agent and "@toolforge.org" in loaded.fetch.user_agent


def test_the_built_in_user_agent_warns_once_when_fetching_from_another_machine(monkeypatch, caplog):
    """The built-in User-Agent names the software, not who runs it: the first request to a host
    other than this machine says so, once; a request to this machine, or with a User-Agent of
    one's own, says nothing."""
    monkeypatch.setattr(side_config, "_warned_user_agent", False)
    own = FetchConfig(user_agent="Tool/1.0 (https://tool.example; ops@tool.example)")
    with caplog.at_level(logging.WARNING, logger="side.config"):
        side_config.warn_without_contact(DEFAULT_USER_AGENT, "http://127.0.0.1:8080/page")
        with pytest.raises(SourceBlockedError):  # refused before connecting: a private address
            download("http://10.0.0.1/page", own)
        assert not caplog.records
        for _ in range(2):
            with pytest.raises(SourceBlockedError):
                download("http://10.0.0.1/page", FetchConfig())
    [record] = caplog.records
    assert "names no contact" in record.getMessage() and "SIDE_FETCH_USER_AGENT" in record.getMessage()
    assert FetchConfig().user_agent == DEFAULT_USER_AGENT

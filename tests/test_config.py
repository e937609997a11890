"""Where Side keeps its working state: var/ in a checkout, the user's data directory when installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from side.config import (
    DEFAULT_VAR_DIR,
    POSITIVE_SETTINGS,
    REPO_ROOT,
    SIGNED_SETTINGS,
    Config,
    default_var_dir,
    is_checkout,
    load_config,
    numeric_settings,
)
from side.errors import ConfigError


def test_a_checkout_keeps_its_state_in_var(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project]\n")
    assert is_checkout(tmp_path) and default_var_dir(tmp_path) == tmp_path / "var"
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / ".git").write_text("gitdir: elsewhere\n")  # a git worktree's .git is a file
    assert default_var_dir(worktree) == worktree / "var"


def test_an_installed_package_keeps_its_state_in_the_users_data_directory(tmp_path, monkeypatch):
    site_packages = tmp_path / "lib" / "python3.11" / "site-packages"
    (site_packages / "side").mkdir(parents=True)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert not is_checkout(site_packages)
    assert default_var_dir(site_packages) == tmp_path / "data" / "side"


def test_this_checkout_and_its_overrides():
    assert DEFAULT_VAR_DIR == REPO_ROOT / "var"
    assert load_config(environ={}).var_dir == DEFAULT_VAR_DIR
    assert load_config(environ={"SIDE_VAR_DIR": "/srv/side"}).var_dir == Path("/srv/side")


@pytest.mark.parametrize(("variable", "value", "message"), [
    ("SIDE_FETCH_TIMEOUT_S", "-1", "fetch.timeout_s must be more than 0, not -1"),
    ("SIDE_FETCH_TIMEOUT_S", "nan", "fetch.timeout_s must be a number, not nan"),
    ("SIDE_VERIFIER_BATCH_SIZE", "0", "verifier.batch_size must be more than 0, not 0"),
    ("SIDE_RETRIEVAL_PASSAGE_WORDS", "0", "retrieval.passage_words must be more than 0, not 0"),
    ("SIDE_VERIFIER_SHORTLIST", "-1", "verifier.shortlist must be 0 or more, not -1"),
    ("SIDE_CONTEXT_WORDS", "-5", "context_words must be 0 or more, not -5"),
    ("SIDE_SERVICE_PORT", "99999", "service.port must be at most 65535, not 99999"),
    ("SIDE_VERIFIER_FLAG_THRESHOLD", "2", "verifier.flag_threshold must lie in [0, 1], not 2"),
    ("SIDE_JUDGE_TIMEOUT_S", "0", "judge.timeout_s must be more than 0, not 0"),
    ("SIDE_JUDGE_RETRIES", "-1", "judge.retries must be 0 or more, not -1"),
])
def test_numbers_out_of_their_bounds_are_refused_by_name(variable, value, message):
    with pytest.raises(ConfigError) as caught:
        load_config(environ={variable: value})
    assert str(caught.value) == message


@pytest.mark.parametrize(("variable", "value"), [
    ("SIDE_VERIFIER_SHORTLIST", "0"),        # every sentence
    ("SIDE_BOT_MAX_REVISION_BYTES", "0"),    # no cap
    ("SIDE_VERIFIER_OWN_SOURCES", "0"),      # never
    ("SIDE_BOT_REPORT_THRESHOLD", "-1"),     # the model's own cut
])
def test_zero_and_the_signed_setting_keep_their_meaning(variable, value):
    load_config(environ={variable: value})


def test_every_bounded_name_is_a_numeric_setting():
    """A misspelt name in the sets would bound nothing."""
    assert POSITIVE_SETTINGS | SIGNED_SETTINGS <= set(numeric_settings(Config()))
    load_config(environ={})  # the defaults are in bounds

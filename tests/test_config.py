"""Where Side keeps its working state: var/ in a checkout, the user's data directory when installed."""

from __future__ import annotations

from pathlib import Path

from side.config import DEFAULT_VAR_DIR, REPO_ROOT, default_var_dir, is_checkout, load_config


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

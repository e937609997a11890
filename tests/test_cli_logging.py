"""At its default level the ``side`` command logs Side's own progress, not its libraries' chatter.

Each command runs in a fresh interpreter: libraries such as faiss log while they are first
imported, and the logging set-up applies once per process.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from httpserver import LocalServer, Response

REPO = Path(__file__).resolve().parent.parent

#: A line of the CLI's log format (``LEVEL logger: message``) below WARNING.
LOW_LEVEL_LINE = re.compile(r"^(?:DEBUG|INFO) (?P<logger>[\w.]+): ", re.MULTILINE)

PAGE = b"""<html><head><title>Harbour report</title></head><body><article><h1>Harbour report</h1>
<p>The harbour was rebuilt in 1902 after a storm destroyed the old pier.</p>
<p>It now shelters the town's fishing fleet and a lifeboat station.</p></article></body></html>"""


def run_side(tmp_path: Path, *args: str, **env: str) -> str:
    """Run ``side ARGS`` at the default log level; its standard error."""
    environ = {**os.environ, "SIDE_VAR_DIR": str(tmp_path / "var"), **env}
    out = subprocess.run([sys.executable, "-m", "side", *args], cwd=REPO, env=environ, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr
    return out.stderr


def loggers_below_warning(stderr: str) -> set[str]:
    return {m["logger"] for m in LOW_LEVEL_LINE.finditer(stderr)}


def third_party(loggers: set[str]) -> set[str]:
    return {name for name in loggers if name != "side" and not name.startswith("side.")}


def test_index_build_and_search_log_no_library_info(tmp_path):
    documents = tmp_path / "docs.jsonl"
    documents.write_text("".join(json.dumps(d) + "\n" for d in [
        {"url": "http://example.org/bridge", "title": "Bridge",
         "text": "The bridge opened to traffic in 1932. It is painted grey. Tolls are collected daily."},
        {"url": "http://example.org/river", "title": "River",
         "text": "The river floods every spring. Fishing is popular along its banks."},
    ]), encoding="utf-8")
    index = tmp_path / "index"
    build = run_side(tmp_path, "index", "build", "--jsonl", str(documents), "--out", str(index))
    # Side's own INFO lines do show at this level: the check below is not vacuous.
    assert "side.retrieval.corpus" in loggers_below_warning(build), build
    search = run_side(tmp_path, "search", "bridge opened", "--index", str(index), "--json")
    for stderr in (build, search):
        assert not third_party(loggers_below_warning(stderr)), stderr
        assert "Loading weights" not in stderr  # transformers' progress bar for the local model


def test_source_logs_no_library_info(tmp_path):
    with LocalServer() as server:
        url = server.add("/report.html", Response(PAGE))
        stderr = run_side(tmp_path, "source", url, "--no-cache", SIDE_FETCH_ALLOW_HOSTS="127.0.0.1")
    assert not third_party(loggers_below_warning(stderr)), stderr

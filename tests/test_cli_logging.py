"""At its default level the ``side`` command logs Side's own progress, not its libraries' chatter,
and no record prints a traceback unless ``--debug`` asks for it.

Each command runs in a fresh interpreter: libraries such as faiss log while they are first
imported, and the logging set-up applies once per process.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from side.cli import EXIT_USAGE
from side.cli.terminal import CliFormatter

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


# -- no tracebacks on the terminal: each log record is one line unless --debug -------------------------------------

#: A line the CLI prints on stderr: a log record (``LEVEL logger: message``) or its one-line error.
CLI_LINE = re.compile(r"^(?:(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: |side: error: )")


class HeaderServer:
    """A server on 127.0.0.1 that answers every request with its status line and then a header
    cut off in its name (``Content-Ty``), dripped a piece at a time; then it hangs up, or with
    ``hold`` keeps the connection open until the client gives up. urllib3 logs such headers as
    a warning with its parser's traceback."""

    PIECES = (b"HTTP/1.0 200 OK\r\n", b"Content-Ty")

    def __init__(self, hold: bool = False) -> None:
        self.hold = hold
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/report"
        self.stopped = threading.Event()

    def __enter__(self) -> HeaderServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(connection,), daemon=True).start()

    def _answer(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)
                for piece in self.PIECES:
                    connection.sendall(piece)
                    time.sleep(0.2)
                if self.hold:
                    connection.settimeout(30)
                    while connection.recv(1024):  # until the client closes
                        pass
            except OSError:
                pass


def side_source(tmp_path: Path, url: str, *options: str, timeout_s: str = "5") -> subprocess.CompletedProcess:
    environ = {**os.environ, "SIDE_VAR_DIR": str(tmp_path / "var"), "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1",
               "SIDE_FETCH_TIMEOUT_S": timeout_s}
    return subprocess.run([sys.executable, "-m", "side", *options, "source", url, "--no-cache"], cwd=REPO,
                          env=environ, capture_output=True, text=True, timeout=120, check=False)


def assert_one_line_each(stderr: str) -> None:
    """No traceback; every line a log record of its own or the error, the error last."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert lines and all(CLI_LINE.match(line) for line in lines), stderr
    assert lines[-1].startswith("side: error: ") and sum(line.startswith("side: error: ") for line in lines) == 1


def test_broken_headers_log_one_line_and_the_traceback_only_with_debug(tmp_path):
    with HeaderServer() as server:
        plain = side_source(tmp_path, server.url)
        debug = side_source(tmp_path, server.url, "--debug")
    assert plain.returncode == EXIT_USAGE, plain.stderr
    assert_one_line_each(plain.stderr)
    # urllib3's warning is still there, on one line, naming what was wrong.
    warning = [line for line in plain.stderr.splitlines() if line.startswith("WARNING urllib3")]
    assert len(warning) == 1 and "Failed to parse headers" in warning[0] and "Content-Ty" in warning[0]
    assert debug.returncode == EXIT_USAGE
    assert "Traceback (most recent call last):" in debug.stderr and "HeaderParsingError" in debug.stderr
    assert debug.stderr.splitlines()[-1] == plain.stderr.splitlines()[-1]


def test_headers_dripped_past_the_deadline_end_in_one_line(tmp_path):
    with HeaderServer(hold=True) as server:
        out = side_source(tmp_path, server.url, timeout_s="1")
    assert out.returncode == EXIT_USAGE, out.stderr
    assert_one_line_each(out.stderr)
    assert out.stderr.splitlines()[-1] == f"side: error: fetching {server.url} timed out after 1 s"


def _record(name: str, message: str, error: BaseException | None = None) -> logging.LogRecord:
    exc_info = None
    if error is not None:
        try:
            raise error
        except type(error):
            exc_info = sys.exc_info()
    return logging.LogRecord(name, logging.WARNING, __file__, 1, message, None, exc_info)


def test_cli_formatter_drops_tracebacks_and_folds_library_lines():
    brief = CliFormatter("%(levelname)s %(name)s: %(message)s")
    full = CliFormatter("%(levelname)s %(name)s: %(message)s", debug=True)
    record = _record("side.pipeline", "check c1: could not hand 2 sources to the corpus", OSError("disk full"))
    assert brief.format(record) == ("WARNING side.pipeline: check c1: could not hand 2 sources to the corpus "
                                    "(OSError: disk full)")
    assert "Traceback (most recent call last):" in full.format(record)
    # A message that already says what the exception says is not told twice.
    quoted = _record("urllib3.connection", "Failed to parse headers: bad line", ValueError("bad line"))
    assert brief.format(quoted) == "WARNING urllib3.connection: Failed to parse headers: bad line"
    # A library's paragraph is one line; Side's own lines keep their line breaks.
    paragraph = "Some weights were not used.\n  - This is expected\n\nif you trained it."
    assert brief.format(_record("transformers.modeling_utils", paragraph)) == (
        "WARNING transformers.modeling_utils: Some weights were not used. - This is expected if you trained it.")
    assert brief.format(_record("side.cli", "first\nsecond")) == "WARNING side.cli: first\nsecond"
    assert record.exc_info is not None and brief.format(record) == brief.format(record)  # the record is untouched

"""`side source`: a cited source's text, or one line and exit 2 when it cannot be had."""

from __future__ import annotations

import json

import pytest

from side.cli import main

from httpserver import LocalServer, Response

PAGE = b"""<html><head><title>Harbour report</title></head><body><article><h1>Harbour report</h1>
<p>The harbour was rebuilt in 1902 after a storm destroyed the old pier.</p>
<p>It now shelters the town's fishing fleet and a lifeboat station.</p></article></body></html>"""


@pytest.fixture()
def server(monkeypatch, tmp_path):
    monkeypatch.setenv("SIDE_FETCH_ALLOW_HOSTS", "127.0.0.1")
    monkeypatch.setenv("SIDE_FETCH_TIMEOUT_S", "0.5")
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path))
    with LocalServer() as srv:
        yield srv


def test_prints_main_text_as_json(server, capsys):
    url = server.add("/report.html", Response(PAGE))
    assert main(["source", url, "--json"]) == 0
    source = json.loads(capsys.readouterr().out)
    assert source["title"] == "Harbour report"
    assert any("rebuilt in 1902" in s for s in source["sentences"])
    assert source["assessment"] == {"state": "readable", "reason": ""}


PAYWALL = b"""<html><head><title>Harbour news</title></head><body><article><h1>Harbour news</h1>
<p>The council met on Tuesday.</p><p>Subscribe to continue reading.</p></article></body></html>"""


def test_says_when_what_was_read_cannot_be_checked(server, capsys):
    url = server.add("/news.html", Response(PAYWALL))
    assert main(["source", url]) == 0
    out = capsys.readouterr().out
    assert "state: cannot check: paywall" in out and "subscribe to continue reading" in out


@pytest.mark.parametrize("response, message", [
    (Response(PAGE, delay_s=2.0), "timed out"),
    (Response(b"\x89PNG\r\n\x1a\n....", content_type="image/png"), "image/png"),
    (Response(b"gone", status=404, content_type="text/plain"), "404"),
])
def test_unusable_source_is_one_line_and_exit_2(server, capsys, response, message):
    url = server.add("/x", response)
    assert main(["source", url, "--no-cache"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("side: error:") and message in err and "\n" not in err


def test_private_address_is_refused(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("SIDE_VAR_DIR", str(tmp_path))
    assert main(["source", "http://169.254.169.254/latest/meta-data/", "--no-cache"]) == 2
    assert "side: error:" in capsys.readouterr().err

"""``side-bot`` as a program: its options, riding out a wiki outage, and the EventStreams feed."""

from __future__ import annotations

import json
import queue
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from bot.changes import EventStreamFeed
from bot.sidebot import main, parse_options
from service.store import Store
from side.errors import InputError

from harness.mediawiki import MediaWiki, is_installed, start_mediawiki


@pytest.mark.parametrize("argv, message", [
    (["-nope"], "unknown option '-nope'"),
    (["-limit:x"], "-limit needs a number, not 'x'"),
    (["-wait:-1"], "-wait must not be negative"),
    (["-wait:nan"], "-wait needs a number, not 'nan'"),
    (["-poll:0"], "-poll must be more than 0"),
    (["-limit:0"], "-limit must be more than 0"),
    (["-post:yes"], "option -post takes no value"),
    (["-api"], "option -api needs a value"),
    (["-api:ftp://example.org/"], "must be the URL of a wiki's api.php"),
    (["stray"], "unknown option 'stray'"),
])
def test_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(*argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("side-bot: error:") and message in err[-1]


def test_options_and_help(capsys):
    options = parse_options(["-post", "-once", "-wait:30", "-limit:5", "-api:http://127.0.0.1:8/api.php", "-noreport"])
    opt = options.opt
    assert (opt.post, opt.once, opt.wait, opt.limit, not opt.noreport) == (True, True, 30.0, 5, False)
    with pytest.raises(InputError):
        parse_options(["-start"])
    assert main("-help") == 0
    assert "-post" in capsys.readouterr().out


# -- -simulate, end to end ---------------------------------------------------------------------

def test_simulate_goes_through_the_save_and_writes_nothing(mediawiki, redis_db, tmp_path):
    """``side-bot -post -simulate``: pywikibot's global option reaches the talk-page save, which
    writes nothing; the same run without it posts (so the first half can fail)."""
    from test_bot_policy import finished_check

    title = f"Simulated {uuid.uuid4().hex[:8]}"
    revision = mediawiki.edit(title, "An article.", user="Alice")
    mediawiki.edit_now("User:TestBot/Run", "yes")
    database = f"sqlite:///{tmp_path / 'db.sqlite3'}"
    store = Store.open(database)
    weak = ("The bridge opened in 1932.", "http://s.example/1", 0.05, True)
    check_id = finished_check(store, title, revision, [weak])
    newest = mediawiki.call({"action": "query", "list": "recentchanges", "rclimit": "1",
                             "rcprop": "timestamp|ids"})["query"]["recentchanges"][0]
    checkpoint = tmp_path / "bot.json"
    folder = mediawiki.pywikibot_dir("TestBot")
    env = {**mediawiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "testwiki", "SIDE_BOT_API_URL": mediawiki.api,
           "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
           "SIDE_BOT_TALK_REPORT_WIKIS": "testwiki", "SIDE_BOT_RUN_PAGE": "User:TestBot/Run",
           "SIDE_BOT_REPORT_THRESHOLD": "0.236", "SIDE_SERVICE_REDIS_URL": redis_db.url,
           "SIDE_SERVICE_DATABASE_URL": database}

    def run(*args: str) -> subprocess.CompletedProcess:
        checkpoint.write_text(json.dumps({"wiki": "testwiki", "pending": [check_id], "handled": 0, "position": {
            "timestamp": newest["timestamp"], "rcid": newest["rcid"]}}))
        result = subprocess.run([sys.executable, "-m", "bot.sidebot", f"-checkpoint:{checkpoint}", "-once", "-post",
                                 *args], env=env, capture_output=True, text=True, timeout=120,
                                stdin=subprocess.DEVNULL, check=False)
        assert result.returncode == 0, result.stderr[-3000:]
        return result

    simulated = run("-simulate")
    assert f"simulated report on Talk:{title}" in simulated.stderr, simulated.stderr[-3000:]
    assert mediawiki.page_text(f"Talk:{title}") is None
    assert json.loads(checkpoint.read_text())["pending"] == []
    assert store.reports_since("testwiki", datetime(2000, 1, 1)) == 0  # nothing counted as posted

    posted = run()
    assert f"posted report on Talk:{title}" in posted.stderr, posted.stderr[-3000:]
    assert "The bridge opened in 1932." in mediawiki.page_text(f"Talk:{title}")
    assert store.reports_since("testwiki", datetime(2000, 1, 1)) == 1


# -- an outage of the wiki ---------------------------------------------------------------------

@pytest.fixture()
def second_wiki(tmp_path) -> Iterator[MediaWiki]:
    """A wiki of its own, since this test stops and restarts the server."""
    ok, reason = is_installed()
    if not ok:
        pytest.skip(reason)
    wiki = start_mediawiki(tmp_path / "wiki")
    yield wiki
    wiki.stop()


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


def test_bot_backs_off_while_the_wiki_is_down_and_resumes(second_wiki, redis_db, tmp_path):
    folder = second_wiki.pywikibot_dir("TestBot")
    env = {**second_wiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "outage", "SIDE_BOT_API_URL": second_wiki.api,
           "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
           "SIDE_SERVICE_REDIS_URL": redis_db.url, "SIDE_SERVICE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    checkpoint, log_path = tmp_path / "bot.json", tmp_path / "bot.log"
    with log_path.open("w") as log:
        bot = subprocess.Popen([sys.executable, "-m", "bot.sidebot", f"-checkpoint:{checkpoint}", "-poll:0.3",
                                "-noreport"], env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            wait_until(checkpoint.exists, 60, "the first checkpoint")
            second_wiki.stop()
            wait_until(lambda: "poll failed" in log_path.read_text(), 120, "a failed poll")
            assert bot.poll() is None, log_path.read_text()[-2000:]  # still running
            second_wiki.start()
            revision = second_wiki.edit("After outage", "Claim.<ref>[http://127.0.0.1:9/x X]</ref>", user="Alice")
            wait_until(lambda: f"submitted After outage r{revision}:" in log_path.read_text(), 180,
                       "the edit made after the outage")
        finally:
            bot.terminate()
            assert bot.wait(30) == 0, log_path.read_text()[-2000:]
    store = Store.open(env["SIDE_SERVICE_DATABASE_URL"])
    assert [c.revision for c in store.checks(origin="bot", wiki="outage")] == [revision]
    assert "retrying in" in log_path.read_text()


# -- EventStreams ------------------------------------------------------------------------------

class EventStreamsShim:
    """A local stand-in for Wikimedia's EventStreams: MediaWiki's UDP RCFeed -> SSE.

    MediaWiki core pushes each recent change as JSON to a UDP port ($wgRCFeeds); this adds the
    ``meta`` block of the Event Platform and serves the events as ``text/event-stream`` with
    chunked encoding (one event per chunk), which is what pywikibot's client reads.
    """

    def __init__(self, udp_port: int) -> None:
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.udp.bind(("127.0.0.1", udp_port))
        self.udp.settimeout(0.2)
        self.clients: list[queue.Queue[bytes]] = []
        self.stopped = threading.Event()
        shim = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                return None

            def do_GET(self) -> None:
                events: queue.Queue[bytes] = queue.Queue()
                shim.clients.append(events)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    while not shim.stopped.is_set():
                        try:
                            event = events.get(timeout=0.2)
                        except queue.Empty:
                            continue
                        self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v2/stream/recentchange"
        self.threads = [threading.Thread(target=self.http.serve_forever, daemon=True),
                        threading.Thread(target=self._relay, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _relay(self) -> None:
        while not self.stopped.is_set():
            try:
                packet, _ = self.udp.recvfrom(65536)
            except TimeoutError:
                continue
            change = json.loads(packet)
            change["meta"] = {"domain": change.get("server_name"), "stream": "mediawiki.recentchange",
                              "id": str(uuid.uuid4()),
                              "dt": datetime.fromtimestamp(change["timestamp"], UTC).isoformat()}
            event = f"event: message\nid: {change['id']}\ndata: {json.dumps(change)}\n\n".encode()
            for client in list(self.clients):
                client.put(event)

    def stop(self) -> None:
        self.stopped.set()
        self.http.shutdown()
        self.http.server_close()
        self.threads[1].join(5)  # the relay leaves recvfrom within its timeout; then the port is free
        self.udp.close()


def test_eventstreams_feed_follows_the_wiki(mediawiki):
    site = mediawiki.pywikibot_site()
    shim = EventStreamsShim(mediawiki.rc_feed_port)
    feed = EventStreamFeed(site, url=shim.url, wait_s=2)
    try:
        assert list(feed.changes_after(None)) == []  # connects; nothing happened yet
        wait_until(lambda: shim.clients, 10, "the stream client")
        title = f"Streamed {uuid.uuid4().hex[:8]}"
        revision = mediawiki.edit(title, "Streamed claim.<ref>[http://example.org/s S]</ref>", user="Alice")
        mediawiki.edit("Talk:" + title, "Not an article.", user="Alice")
        mediawiki.edit(title + " by a bot", "Bot text.", user="TestBot", bot=True)
        second = mediawiki.edit(title, "Streamed claim, edited.<ref>[http://example.org/s S]</ref>", user="Alice")
        changes: list = []
        wait_until(lambda: changes.extend(feed.changes_after(changes[-1].position if changes else None))
                   or len(changes) >= 2, 30, "two streamed changes")
        assert [(c.title, c.revision, c.parent_revision, c.type) for c in changes] == [
            (title, revision, 0, "new"), (title, second, revision, "edit")]
        assert changes[0].position < changes[1].position
    finally:
        feed.close()
        shim.stop()


def test_bot_uses_the_stream_end_to_end(mediawiki, redis_db, tmp_path):
    """``side-bot -stream -streamurl:...`` submits a check for a streamed edit."""
    shim = EventStreamsShim(mediawiki.rc_feed_port)
    folder = mediawiki.pywikibot_dir("TestBot")
    env = {**mediawiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "streamed", "SIDE_BOT_API_URL": mediawiki.api,
           "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
           "SIDE_SERVICE_REDIS_URL": redis_db.url, "SIDE_SERVICE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}
    log_path = tmp_path / "bot.log"
    with log_path.open("w") as log:
        bot = subprocess.Popen([sys.executable, "-m", "bot.sidebot", f"-checkpoint:{tmp_path / 'bot.json'}",
                                "-stream", f"-streamurl:{shim.url}", "-poll:0.5", "-noreport"],
                               env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        try:
            wait_until(lambda: shim.clients, 60, "the bot to connect to the stream")
            title = f"Streamed bot {uuid.uuid4().hex[:8]}"
            revision = mediawiki.edit(title, "Claim.<ref>[http://127.0.0.1:9/y Y]</ref>", user="Alice")
            wait_until(lambda: f"submitted {title} r{revision}:" in log_path.read_text(), 60, "the streamed edit")
        finally:
            bot.terminate()
            bot.wait(30)
            shim.stop()
    checkpoint = json.loads(Path(tmp_path / "bot.json").read_text())
    assert checkpoint["position"]["timestamp"] and checkpoint["handled"] >= 1

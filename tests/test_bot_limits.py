"""The bot and one huge revision: size and citation caps, bounded extraction, the poison rule.

A revision can be up to 2 MiB of wikitext, and 2 MiB of ``a<ref name=n/>`` is 149,796 citation
uses: parsed whole, that was a minute and 1.4 GB, past the bot's 1 GiB Toolforge job. The caps
(``bot.max_revision_bytes``, ``bot.max_claims_per_revision``) skip such a revision, counted with
its reason in the run summary; and a revision that kills the bot anyway is skipped after two
deaths ("crashed twice") instead of being read again on every restart. The bot runs as a
subprocess against a real local MediaWiki, Redis and an SQLite store, as in test_bot_sidebot.py.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from service.store import Store
from side.errors import TooManyClaimsError
from side.extract.wikitext import added_citations, count_claim_marks

from hostile import huge_revisions

#: 2 MiB of a reused named ref: 149,796 citation uses.
HUGE_REFS = huge_revisions()["2 MiB of <ref name=n/>"]


def unique(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:8]}"


# -- extraction -----------------------------------------------------------------------------------

def test_claim_marks_never_undercount():
    text = ("A.<ref>{{cite web|url=http://a.example}}</ref> B.<REF name=x/> C.{{Sfn|Smith|2001}} "
            "D.{{ sfnp |Jones|2002}} E.{{#tag:ref|note}} F.<ref name=x /> <references/> {{reflist}}")
    claims = added_citations("", text, "T")
    assert count_claim_marks(text) >= len(claims) == 6
    assert count_claim_marks(text, limit=2) == 3  # counting stops past the limit


def test_two_mib_of_refs_is_refused_before_it_is_parsed():
    """In a subprocess, for its own peak RSS: the cap answers at once, in little memory.

    VmHWM, not ru_maxrss: Linux copies a parent's ru_maxrss into the child at fork, so a child
    of a large test process would report the parent's peak."""
    code = (
        "import sys, time\n"
        "from side.errors import TooManyClaimsError\n"
        "from side.extract.wikitext import added_citations\n"
        f"text = {HUGE_REFS[:14]!r} * {len(HUGE_REFS) // 14}\n"
        "start = time.perf_counter()\n"
        "try:\n"
        "    added_citations('', text, 'T', max_claims=5000)\n"
        "    print('no error')\n"
        "except TooManyClaimsError as exc:\n"
        "    print(exc)\n"
        "hwm = next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
        "print(time.perf_counter() - start, hwm // 1024)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    message, figures = result.stdout.strip().splitlines()
    seconds, rss_mib = float(figures.split()[0]), int(figures.split()[1])
    assert "more than 5000 citation marks" in message
    assert seconds < 2 and rss_mib < 300, (seconds, rss_mib)


def test_the_benchmark_reports_its_child_s_own_peak_not_its_parent_s():
    """benchmarks/bad_input.py reads each huge revision in a child process for its own peak RSS:
    started from a parent that holds far more memory, the child still reports its own."""
    from side.config import REPO_ROOT

    held_mib = 768
    parent = (
        "import json, subprocess, sys\n"
        f"held = bytearray({held_mib} * 1024 * 1024)\n"
        "held[::4096] = b'x' * len(held[::4096])  # touched: resident\n"
        "out = subprocess.run([sys.executable, 'benchmarks/bad_input.py', '--read-revision',\n"
        "                      '2 MiB of <ref name=n/>'], capture_output=True, text=True, check=True)\n"
        "print(out.stdout.strip().splitlines()[-1])\n"
    )
    result = subprocess.run([sys.executable, "-c", parent], cwd=REPO_ROOT, capture_output=True, text=True,
                            timeout=300, check=True)
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["outcome"].startswith("skipped")
    assert 0 < measured["peak_rss_mib"] < held_mib, measured


def test_a_page_past_the_count_is_still_held_to_the_cap():
    """List-defined refs count twice in the marks; a page under the count is capped while walked."""
    text = "".join(f"Claim {n}.<ref>[http://a.example/{n} A]</ref> " for n in range(12))
    assert len(added_citations("", text, "T", max_claims=12)) == 12
    with pytest.raises(TooManyClaimsError, match="more than 11"):
        added_citations("", text, "T", max_claims=11)
    with pytest.raises(TooManyClaimsError, match="old revision"):
        added_citations(text, "Short.<ref>x</ref>", "T", max_claims=5)


# -- the bot, on a real wiki -------------------------------------------------------------------

@pytest.fixture()
def bot_env(mediawiki, redis_db, tmp_path) -> dict[str, str]:
    folder = mediawiki.pywikibot_dir("TestBot")
    return {**mediawiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "limits", "SIDE_BOT_API_URL": mediawiki.api,
            "SIDE_BOT_USER": "TestBot", "SIDE_BOT_PASSWORD_FILE": str(folder / "user-password.py"),
            "SIDE_SERVICE_REDIS_URL": redis_db.url,
            "SIDE_SERVICE_DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}"}


def bot_command(checkpoint: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "bot.sidebot", f"-checkpoint:{checkpoint}", "-noreport", *args]


def run_once(env: dict[str, str], checkpoint: Path) -> str:
    result = subprocess.run(bot_command(checkpoint, "-once"), env=env, capture_output=True, text=True, timeout=300,
                            stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stderr


def summary(log: str) -> dict[str, int]:
    """The run summary the bot logs when it stops."""
    found = re.findall(r"stopping: (\{.*\})", log)
    assert found, log[-2000:]
    return json.loads(found[-1].replace("'", '"'))


def test_revisions_over_the_caps_are_skipped_and_counted(mediawiki, bot_env, tmp_path):
    checkpoint = tmp_path / "bot.json"
    env = {**bot_env, "SIDE_BOT_MAX_REVISION_BYTES": "20000", "SIDE_BOT_MAX_CLAIMS_PER_REVISION": "40"}
    run_once(env, checkpoint)  # first run: starts after the newest change
    big = mediawiki.edit(unique("Big"), "Long text without any citation. " * 700, user="Alice")
    cited = mediawiki.edit(unique("Cited"), "".join(f"Claim {n}.<ref>[http://127.0.0.1:9/{n} S]</ref> "
                                                    for n in range(41)), user="Alice")
    fine = mediawiki.edit(unique("Fine"), "One claim.<ref>[http://127.0.0.1:9/fine Fine]</ref>", user="Alice")
    log = run_once(env, checkpoint)
    counts = summary(log)
    assert counts["skipped: revision too large"] == 1 and counts["skipped: too many citations"] == 1
    assert counts["submitted"] == 1 and counts["handled"] == 3
    assert re.search(rf"skip Big \w+ r{big}: revision too large \([0-9,]+ bytes.*; not downloaded\)", log)
    assert re.search(rf"skip Cited \w+ r{cited}: too many citations", log)
    store = Store.open(env["SIDE_SERVICE_DATABASE_URL"])
    assert [c.revision for c in store.checks(origin="bot", wiki="limits")] == [fine]


def read_checkpoint(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def kill_while_handling(env: dict[str, str], checkpoint: Path, revision: int, attempt: int, log: Path) -> None:
    """Start the bot and SIGKILL it as soon as it records its ``attempt``-th start on ``revision``."""
    with log.open("w") as err:
        bot = subprocess.Popen(bot_command(checkpoint, "-poll:0.3"), env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 120
        try:
            while time.monotonic() < deadline and bot.poll() is None:
                in_progress = read_checkpoint(checkpoint).get("in_progress") or {}
                if (in_progress.get("revision"), in_progress.get("attempts")) == (revision, attempt):
                    break
                time.sleep(0.005)
        finally:
            bot.send_signal(signal.SIGKILL)
            bot.wait()
    assert (in_progress.get("revision"), in_progress.get("attempts")) == (revision, attempt), log.read_text()[-2000:]
    assert "submitted After" not in log.read_text()  # killed in the huge revision, not after it


def test_a_revision_that_kills_the_bot_twice_is_skipped(mediawiki, bot_env, tmp_path):
    """Without caps, a huge revision is read for seconds: the bot is killed in it, twice; the
    third start skips it as "crashed twice" and goes on with the next edit."""
    checkpoint = tmp_path / "bot.json"
    env = {**bot_env, "SIDE_BOT_MAX_REVISION_BYTES": "0", "SIDE_BOT_MAX_CLAIMS_PER_REVISION": "0"}
    run_once(env, checkpoint)
    huge = mediawiki.edit(unique("Huge"), HUGE_REFS[: 14 * 3000], user="Alice")
    after = mediawiki.edit(unique("After"), "Next claim.<ref>[http://127.0.0.1:9/next Next]</ref>", user="Alice")
    kill_while_handling(env, checkpoint, huge, 1, tmp_path / "run1.log")
    kill_while_handling(env, checkpoint, huge, 2, tmp_path / "run2.log")
    log = run_once(env, checkpoint)
    assert re.search(rf"skip Huge \w+ r{huge}: crashed twice", log), log[-2000:]
    counts = summary(log)
    assert counts["skipped: crashed twice"] == 1 and counts["submitted"] == 1
    saved = read_checkpoint(checkpoint)
    assert saved["in_progress"] is None
    store = Store.open(env["SIDE_SERVICE_DATABASE_URL"])
    assert [c.revision for c in store.checks(origin="bot", wiki="limits")] == [after]


def test_errors_the_bot_retries_are_not_crashes(mediawiki, bot_env, redis_db, tmp_path):
    """Redis down while an edit is submitted: the bot retries it poll after poll, and each failed
    try leaves no attempt recorded, so the edit is submitted once Redis is back, not skipped."""
    checkpoint, log_path = tmp_path / "bot.json", tmp_path / "bot.log"
    run_once(bot_env, checkpoint)

    def wait_for(what: str, count: int = 1) -> None:
        deadline = time.monotonic() + 120
        while log_path.read_text().count(what) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        assert log_path.read_text().count(what) >= count, log_path.read_text()[-2000:]

    with log_path.open("w") as log:
        bot = subprocess.Popen(bot_command(checkpoint, "-poll:0.3"), env=bot_env, stdin=subprocess.DEVNULL,
                               stdout=log, stderr=log)
        try:
            wait_for("non-transactional DDL")  # the store is open; the queue's Redis is pinged next
            time.sleep(3)
            redis_db.stop()
            revision = mediawiki.edit(unique("Outage"), "Claim.<ref>[http://127.0.0.1:9/o O]</ref>", user="Alice")
            wait_for("poll failed", 3)
            assert (read_checkpoint(checkpoint).get("in_progress") or {}).get("attempts", 0) <= 1
            redis_db.start()
            wait_for(f"r{revision}:")
        finally:
            redis_db.start()
            bot.terminate()
            assert bot.wait(30) == 0, log_path.read_text()[-2000:]
    text = log_path.read_text()
    assert "submitted Outage" in text and "crashed twice" not in text, text[-2000:]
    assert read_checkpoint(checkpoint)["in_progress"] is None

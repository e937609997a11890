"""The bot on a real local MediaWiki: edits per second from recent changes, and edit -> report latency.

**Intake** (what the bot itself can sustain): the 72 real Wikipedia articles of
``fixtures/wikitext`` are loaded into a fresh local MediaWiki, then ``--edits`` human edits
each add one sentence with a new ``{{cite web}}`` to one of them (round robin, so big pages
like United Kingdom, 328 KB, come up as often as stubs). The bot's loop (``CitationBot.poll``:
``list=recentchanges`` with continuation, the old and new wikitext of each revision in batched
``prop=revisions`` requests, ``added_citations`` on both texts, one Check per revision written
to a SQLite store and queued in Redis, the checkpoint saved after each change) then handles
the backlog; its rate is compared with the English Wikipedia's edit rate (about 2 edits/s,
all namespaces; peer figure from Wikimedia statistics).

**Latency** (what an editor waits for): ``side-bot -post`` runs as a subprocess next to one
CPU ``side-worker`` (no evidence index, so no corpus suggestions); each of ``--latency-edits``
edits adds the scenario's supported and unsupported citations (test_bot_scenario.py, real
pages on a local HTTP server), and the clock runs from the saved edit to the talk-page section.
The worker's own time per check is reported beside it.

    .venv/bin/python benchmarks/bot.py [--edits 144] [--latency-edits 5] [--poll 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

#: English Wikipedia edits per second, all namespaces (about 170,000 a day).
ENWIKI_EDITS_PER_S = 2.0


def added_sentence(n: int, title: str) -> str:
    return (f" In {1900 + n % 120} the subject of {title} was described in a regional survey (note {n})."
            f"<ref>{{{{cite web |url=http://127.0.0.1:9/survey/{n} |title=Regional survey {n}}}}}</ref>")


def with_sentence(text: str, sentence: str) -> str:
    """The article with ``sentence`` appended to its first prose paragraph."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        stripped = line.strip()
        if len(stripped) > 80 and not stripped.startswith(("{", "|", "[[File", "[[Image", "<", "=", "*", "#", "!")):
            lines[i] = line.rstrip() + sentence
            return "\n".join(lines)
    return text + "\n\n" + sentence.strip()


def load_articles(wiki) -> dict[str, str]:
    from side.config import load_config

    folder = load_config().data_dir / "fixtures" / "wikitext"
    articles = {}
    for path in sorted(folder.glob("*.txt")):
        title = path.stem.replace("-", " ")
        articles[title] = path.read_text(encoding="utf-8")
        wiki.edit(title, articles[title], user="Admin", summary="import")
    return articles


def measure_intake(wiki, folder: Path, edits: int) -> None:
    from bot.changes import RecentChangesFeed
    from bot.checkpoint import CheckpointFile
    from bot.sidebot import CitationBot
    from service.queue import get_queue, redis_connection, submit
    from service.store import Store
    from side.config import ServiceConfig

    started = time.perf_counter()
    articles = load_articles(wiki)
    print(f"loaded {len(articles)} real articles ({sum(map(len, articles.values())) / 1e6:.1f} MB of wikitext) "
          f"in {time.perf_counter() - started:.0f} s", flush=True)
    site = wiki.pywikibot_site()
    from harness.redis import RedisServer

    redis_server = RedisServer(folder / "redis").start()
    try:
        service = ServiceConfig(redis_url=redis_server.url, database_url=f"sqlite:///{folder / 'intake.sqlite3'}")
        store = Store.open(service.database_url)
        queue = get_queue(redis_connection(service.redis_url), service)
        bot = CitationBot(site, RecentChangesFeed(site), store, lambda new: submit(store, queue, new, service),
                          CheckpointFile(folder / "intake.json"), "bench")
        bot.start_position(None)
        titles, texts = list(articles), dict(articles)
        started = time.perf_counter()
        for n in range(edits):
            title = titles[n % len(titles)]
            texts[title] = with_sentence(texts[title], added_sentence(n, title))
            wiki.edit(title, texts[title], user="Alice", summary="add a source")
        print(f"made {edits} edits in {time.perf_counter() - started:.0f} s", flush=True)
        requests_before = bot.feed.requests
        started = time.perf_counter()
        while bot.counter["handled"] < edits:
            bot.poll()
        seconds = time.perf_counter() - started
    finally:
        redis_server.kill()
    rate = edits / seconds
    print(f"\nintake: {edits} edits handled in {seconds:.1f} s = {rate:.1f} edits/s "
          f"({bot.counter['submitted']} checks queued, {bot.feed.requests - requests_before} recentchanges requests)")
    print(f"enwiki (peer): ~{ENWIKI_EDITS_PER_S:.0f} edits/s -> the bot keeps up {rate / ENWIKI_EDITS_PER_S:.1f}x over")


def start_worker(folder: Path):
    from side.config import ServiceConfig
    from workers.stack import Stack

    from harness.redis import free_port

    service = ServiceConfig(redis_url=f"redis://127.0.0.1:{free_port()}/0",
                            database_url=f"sqlite:///{folder / 'latency.sqlite3'}")
    env = {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2", "SIDE_VAR_DIR": str(folder / "var"),
           "SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1"}
    stack = Stack(redis_url=service.redis_url, database_url=service.database_url, log_dir=folder / "log",
                  redis_dir=folder / "redis-latency", workers=1, with_web=False, env=env, worker_args=["--no-index"])
    return stack.start(), service


def measure_latency(wiki, folder: Path, edits: int, poll_s: float) -> None:
    from test_bot_scenario import start_scenario

    from service.store import Store

    scenario = start_scenario()
    stack, service = start_worker(folder)
    run_page = "User:TestBot/Run"
    wiki.edit_now(run_page, "yes")
    titles = [f"Todd Watson (latency {n})" for n in range(edits)]
    for title in titles:
        wiki.edit(title, scenario.article, user="Alice")
    pwb = wiki.pywikibot_dir("TestBot")
    env = {**stack.child_env(), **wiki.pywikibot_env("TestBot"), "SIDE_BOT_WIKI": "bench",
           "SIDE_BOT_API_URL": wiki.api, "SIDE_BOT_USER": "TestBot",
           "SIDE_BOT_PASSWORD_FILE": str(pwb / "user-password.py"), "SIDE_BOT_TALK_REPORT_WIKIS": "bench",
           "SIDE_BOT_RUN_PAGE": run_page, "SIDE_BOT_POLL_INTERVAL_S": str(poll_s)}
    checkpoint = folder / "latency.json"
    log = (folder / "bot.log").open("w")
    bot = subprocess.Popen([sys.executable, "-m", "bot.sidebot", "-post", f"-checkpoint:{checkpoint}"], env=env,
                           stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    latencies, worker_s = [], []
    try:
        while not checkpoint.exists():
            time.sleep(0.1)
        store = Store.open(service.database_url)
        for title in titles:
            started = time.perf_counter()
            revision = wiki.edit(title, scenario.edit, user="Alice", summary="more sources")
            while wiki.page_text(f"Talk:{title}") is None:
                if bot.poll() is not None or time.perf_counter() - started > 600:
                    raise RuntimeError(f"no report for {title}; see {folder / 'bot.log'}")
                time.sleep(0.05)
            latencies.append(time.perf_counter() - started)
            record = next(c for c in store.checks(origin="bot", wiki="bench") if c.revision == revision)
            worker_s.append(record.seconds or 0.0)
            print(f"  {title}: report after {latencies[-1]:.1f} s (worker {worker_s[-1]:.1f} s)", flush=True)
    finally:
        bot.terminate()
        bot.wait(30)
        stack.stop()
        scenario.server.stop()
    print(f"\nlatency edit -> talk-page report, 1 CPU worker, poll {poll_s:g} s, {edits} edits: "
          f"median {statistics.median(latencies):.1f} s (min {min(latencies):.1f}, max {max(latencies):.1f}); "
          f"worker median {statistics.median(worker_s):.1f} s per check of 2 citations, the rest is polling, "
          "queueing and posting")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--edits", type=int, default=144, help="edits for the intake measurement")
    parser.add_argument("--latency-edits", type=int, default=5, help="edits for the latency measurement (0: skip)")
    parser.add_argument("--poll", type=float, default=1.0, help="bot poll interval for the latency run, seconds")
    args = parser.parse_args()
    from harness.mediawiki import is_installed, start_mediawiki

    ok, reason = is_installed()
    if not ok:
        sys.exit(f"benchmarks/bot.py: {reason}")
    with tempfile.TemporaryDirectory(prefix="side-bot-bench-") as tmp:
        folder = Path(tmp)
        wiki = start_mediawiki(folder / "wiki")
        try:
            measure_intake(wiki, folder, args.edits)
            if args.latency_edits:
                measure_latency(wiki, folder, args.latency_edits, args.poll)
        finally:
            wiki.stop()


if __name__ == "__main__":
    main()

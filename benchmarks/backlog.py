"""Backlog intake on a real local MediaWiki: tagged pages and tagged claims per minute.

The 72 real Wikipedia articles of ``fixtures/wikitext`` (1.6 MB of wikitext, stubs to 328 KB)
are loaded into a fresh local MediaWiki with maintenance tags written in, as editors leave them:
``{{failed verification|date=…}}`` after the first cited sentence of the article, and
``{{citation needed|date=…}}`` after the first sentence of each of the first two prose paragraphs
that give no source there. The tags are the real templates, so the pages are in English
Wikipedia's tracking categories. Backlog mode (``bot.backlog.BacklogBot``, in this process, as
``side-bot -backlog`` runs it) then reads the categories' members with continuation, the texts in
batches, finds the tagged claims (``side.extract.tagged.find_tagged``) and submits one Check per
page to a SQLite store and a real Redis queue (no worker: intake only). Two runs, each from an
empty checkpoint and store:

* **rate limit off** (``bot.backlog_pages_per_min = 0``): what the bot itself sustains;
* **default rate limit** (``bot.backlog_pages_per_min`` as shipped): what an operator gets.

The peer is the first run: the second's rate is printed as a ratio of it, and both as the time a
100,000-page category would take (one run after another, ``bot.backlog_max_pages`` at a time).

    PYTHONPATH=$PWD .venv/bin/python benchmarks/backlog.py [--copies 1] [--limited-pages 40]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

CN = "{{citation needed|date=May 2024}}"
FV = "{{failed verification|date=May 2024|reason=The source does not mention it}}"
#: Lines that are not prose (templates, tables, files, headings, lists, comments, tags).
NOT_PROSE = ("{", "|", "!", "[[File", "[[Image", "<", "=", "*", "#", ":", ";")
#: The end of a plain sentence: a lower-case letter or digit, a full stop, a space, a capital.
SENTENCE_END = re.compile(r"(?<=[a-z0-9])\.(?= [A-Z])")
BIG_CATEGORY = 100_000


def with_tags(text: str) -> tuple[str, int]:
    """``text`` with tags written in (see the module doc); returns it and how many were added."""
    lines, added, cn_left, fv_left = text.split("\n"), 0, 2, 1
    for i, line in enumerate(lines):
        if len(line) < 120 or line.lstrip().startswith(NOT_PROSE):
            continue
        if fv_left and "</ref>" in line:
            at = line.index("</ref>") + len("</ref>")
            lines[i] = line = line[:at] + FV + line[at:]
            fv_left, added = fv_left - 1, added + 1
        match = SENTENCE_END.search(line)
        if cn_left and match and "<ref" not in line[: match.end() + 6] and "{{" not in line[: match.end()]:
            lines[i] = line[: match.end()] + CN + line[match.end():]
            cn_left, added = cn_left - 1, added + 1
        if not (cn_left or fv_left):
            break
    return "\n".join(lines), added


def load_pages(wiki, copies: int) -> dict[str, str]:
    """The real articles with tags, ``copies`` times under distinct titles, saved through the API."""
    from test_bot_backlog import add_tag_templates

    from side.config import load_config

    add_tag_templates(wiki)
    folder = load_config().data_dir / "fixtures" / "wikitext"
    if not any(folder.glob("*.txt")):
        sys.exit(f"benchmarks/backlog.py: no articles in {folder} (set SIDE_DATA_DIR to the shared data)")
    pages = {}
    for copy in range(copies):
        for path in sorted(folder.glob("*.txt")):
            title = path.stem.replace("-", " ") + (f" ({copy + 1})" if copy else "")
            text, added = with_tags(path.read_text(encoding="utf-8"))
            if added:
                pages[title] = text
                wiki.edit(title, text, user="Admin", summary="import with maintenance tags")
    wiki.run_maintenance("runJobs.php", "--quiet")  # category links of every page in place
    return pages


def category_sizes(wiki, categories: list[str]) -> dict[str, int]:
    titles = "|".join(f"Category:{c}" for c in categories)
    data = wiki.call({"action": "query", "prop": "categoryinfo", "titles": titles})
    return {p["title"].split(":", 1)[1]: p.get("categoryinfo", {}).get("pages", 0) for p in data["query"]["pages"]}


def run(wiki, folder: Path, name: str, pages_per_min: float, max_pages: int):
    """One backlog run from an empty checkpoint, store and queue; returns its summary."""
    from bot.backlog import BacklogBot, BacklogCheckpoint, BacklogSettings
    from service.queue import get_queue, redis_connection, submit
    from service.store import Store
    from side.config import ServiceConfig, load_config

    from harness.redis import RedisServer

    bot_config = replace(load_config().bot, backlog_pages_per_min=pages_per_min)
    settings = BacklogSettings.from_config(bot_config, max_pages=max_pages)
    redis_server = RedisServer(folder / f"redis-{name}").start()
    try:
        service = ServiceConfig(redis_url=redis_server.url, database_url=f"sqlite:///{folder / f'{name}.sqlite3'}")
        store = Store.open(service.database_url)
        queue = get_queue(redis_connection(service.redis_url), service)
        bot = BacklogBot(wiki.pywikibot_site(), lambda new: submit(store, queue, new, service),
                         BacklogCheckpoint(folder / f"{name}.json", wiki.dbname), wiki.dbname, settings)
        summary = bot.run()
        store.close()
    finally:
        redis_server.kill()
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--copies", type=int, default=1, help="load the articles this many times (default 1: 72 pages)")
    parser.add_argument("--limited-pages", type=int, default=40,
                        help="pages for the run at the default rate limit (default 40, i.e. ~40 s at 60/min)")
    args = parser.parse_args()
    from side.config import load_config

    from harness.mediawiki import is_installed, start_mediawiki

    ok, reason = is_installed()
    if not ok:
        sys.exit(f"benchmarks/backlog.py: {reason}")
    default_rate = load_config().bot.backlog_pages_per_min
    default_max = load_config().bot.backlog_max_pages
    with tempfile.TemporaryDirectory(prefix="side-backlog-bench-") as tmp:
        folder = Path(tmp)
        wiki = start_mediawiki(folder / "wiki")
        try:
            started = time.perf_counter()
            pages = load_pages(wiki, args.copies)
            from test_bot_backlog import BSN_CATEGORY, CN_CATEGORY, FV_CATEGORY

            sizes = category_sizes(wiki, [FV_CATEGORY, CN_CATEGORY, BSN_CATEGORY])
            megabytes = sum(map(len, pages.values())) / 1e6
            print(f"loaded {len(pages)} pages of real articles with tags ({megabytes:.1f} MB) "
                  f"in {time.perf_counter() - started:.0f} s; category members: "
                  + ", ".join(f"{c}: {n}" for c, n in sizes.items()), flush=True)
            free = run(wiki, folder, "free", 0.0, len(pages))
            print(f"rate limit off:          {free.line()}", flush=True)
            limited = run(wiki, folder, "limited", default_rate, min(args.limited_pages, len(pages)))
            print(f"default rate limit ({default_rate:g}/min): {limited.line()}", flush=True)
        finally:
            wiki.stop()

    def rate(summary) -> tuple[float, float]:
        minutes = max(summary.seconds, 1e-9) / 60
        return summary.pages / minutes, summary.claims / minutes

    (free_pages, free_claims), (limited_pages, limited_claims) = rate(free), rate(limited)
    print(f"\nbacklog intake, {len(pages)} pages of real articles on the local wiki: "
          f"rate limit off {free_pages:.0f} pages/min, "
          f"{free_claims:.0f} tagged claims/min; default rate limit {limited_pages:.0f} pages/min, "
          f"{limited_claims:.0f} claims/min ({limited_pages / free_pages:.2f}x of the unlimited rate)")
    print(f"a {BIG_CATEGORY:,}-page category: {BIG_CATEGORY / free_pages / 60:.1f} h unlimited, "
          f"{BIG_CATEGORY / limited_pages / 60:.1f} h at the default rate limit, "
          f"in {-(-BIG_CATEGORY // default_max)} runs of bot.backlog_max_pages = {default_max}")
    print(f"load average at the end: {' '.join(f'{x:.1f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

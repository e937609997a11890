"""The evidence corpus of a wiki: every source its articles cite, fetched and indexed.

``side index build --dump FILE`` reads the dump's cited URLs (:mod:`side.extract.dump`),
fetches them politely and resumably (:mod:`side.sources.crawl`), and hands the readable pages
to the corpus builder as :class:`Document` objects keyed by their canonical URL, with the URL
as cited, the page's title and when it was fetched. Pages read by earlier, interrupted runs
come from the crawl's state, so each run indexes everything read so far.
"""

from __future__ import annotations

import logging
from pathlib import Path

from side.config import Config
from side.errors import InputError
from side.retrieval.corpus import Document

__all__ = ["crawl_state_path", "dump_documents"]

log = logging.getLogger(__name__)


def crawl_state_path(dump: str | Path, config: Config) -> Path:
    """``crawl.state``, or var/crawl/<dump file name>.sqlite3."""
    if config.crawl.state:
        return Path(config.crawl.state)
    return Path(config.var_dir) / "crawl" / f"{Path(dump).name}.sqlite3"


def dump_documents(dump: str | Path, config: Config, limit: int | None = None,
                   progress: bool = True) -> list[Document]:
    """Fetch what the dump cites and is not fetched yet (at most ``limit`` URLs), then return
    every readable page read so far, by this run or an earlier one."""
    from side.sources.crawl import CrawlState, crawl

    if limit is not None and limit < 0:
        raise InputError(f"--limit must be 0 or more, not {limit}")
    if not Path(dump).is_file():  # before a state file is made for it
        raise InputError(f"dump not found: {dump}")
    with CrawlState(crawl_state_path(dump, config)) as state:
        found = state.scan(dump)
        if found:
            log.info("%s: %d cited URLs new to %s", dump, found, state.path)
        report = crawl(state, config.fetch, config.crawl, limit=limit, progress=progress)
        log.info("%s", report.describe())
        return [Document(page.key, page.url, page.title, page.text, page.sentences, page.fetched_at)
                for page in state.pages()]

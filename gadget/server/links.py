"""Links from a stored check to its wiki: the article, the diff that added the citation.

Checks carry a wiki id in the dbname style (``enwiki``, ``dewiktionary``, ``commonswiki``);
Wikimedia's ids map to hosts by rule, so only other wikis (the local MediaWiki the tests run)
need a ``service.wiki_urls`` entry giving their script path, the folder of ``index.php``.
Links go through ``index.php`` with query parameters so the same code serves every wiki,
whatever its article path.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from side.extract.wikiapi import parse_wiki_urls

#: dbname suffix -> Wikimedia project domain.
PROJECTS = {
    "wiki": "wikipedia.org", "wiktionary": "wiktionary.org", "wikibooks": "wikibooks.org",
    "wikinews": "wikinews.org", "wikiquote": "wikiquote.org", "wikisource": "wikisource.org",
    "wikiversity": "wikiversity.org", "wikivoyage": "wikivoyage.org",
}
#: Wikimedia wikis whose dbname does not follow ``<language><project>``.
SPECIAL = {
    "commonswiki": "https://commons.wikimedia.org/w", "metawiki": "https://meta.wikimedia.org/w",
    "wikidatawiki": "https://www.wikidata.org/w", "specieswiki": "https://species.wikimedia.org/w",
    "mediawikiwiki": "https://www.mediawiki.org/w", "foundationwiki": "https://foundation.wikimedia.org/w",
    "testwikidatawiki": "https://test.wikidata.org/w",
}
_DBNAME = re.compile(r"^([a-z][a-z0-9_]*?)(wiki|wiktionary|wikibooks|wikinews|wikiquote|wikisource|"
                     r"wikiversity|wikivoyage)$")


class WikiLinks:
    """Maps wiki ids to script paths, configured entries first."""

    def __init__(self, configured: dict[str, str] | str | None = None) -> None:
        self.configured = parse_wiki_urls(configured)

    def script_path(self, wiki: str) -> str | None:
        """``https://en.wikipedia.org/w`` for ``enwiki``; None for an unknown id."""
        if wiki in self.configured:
            return self.configured[wiki]
        if wiki in SPECIAL:
            return SPECIAL[wiki]
        match = _DBNAME.match(wiki)
        if not match:
            return None
        language, project = match.groups()
        return f"https://{language.replace('_', '-')}.{PROJECTS[project]}/w"

    def _index(self, wiki: str, **params: str | int) -> str | None:
        base = self.script_path(wiki)
        return None if base is None else f"{base}/index.php?{urlencode(params)}"

    def article(self, wiki: str, title: str) -> str | None:
        return self._index(wiki, title=title.replace(" ", "_"))

    def revision(self, wiki: str, title: str, revision: int | None) -> str | None:
        """The checked revision itself (permanent link)."""
        if revision is None:
            return self.article(wiki, title)
        return self._index(wiki, title=title.replace(" ", "_"), oldid=revision)

    def edit_section(self, wiki: str, title: str, section: int) -> str | None:
        """The wiki's editor opened at one section (0 = the lead), where a tagged claim is fixed."""
        return self._index(wiki, title=title.replace(" ", "_"), action="edit", section=section)

    def diff(self, wiki: str, revision: int | None, parent: int | None) -> str | None:
        """The edit that was checked; None when the check did not come from a revision."""
        if revision is None:
            return None
        if parent is None:
            return self._index(wiki, diff=revision)
        return self._index(wiki, diff=revision, oldid=parent)

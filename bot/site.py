"""Which wiki the bot talks to, configured at run time.

On Wikimedia wikis the bot uses pywikibot's own families (``wikipedia:en``) and the operator's
``user-config.py`` and password file, as every pywikibot script does. A wiki pywikibot has no
family for (the local MediaWiki of the tests, a staging wiki) is reached by its Action API URL:
pywikibot builds an ``AutoFamily`` from ``config.family_files``, so no family file and no
``user-config.py`` have to be written. Account and password file can be set the same way,
which is how tests and Toolforge jobs pass them without editing pywikibot's files.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from side.errors import ConfigError

if TYPE_CHECKING:
    from pywikibot.site import APISite

log = logging.getLogger(__name__)

#: Name of the AutoFamily registered for a wiki given by API URL (family and code alike).
API_FAMILY_PREFIX = "side-"


@dataclass(frozen=True)
class SiteSpec:
    """How to reach and log in to one wiki."""

    #: Short wiki id used in the store (``enwiki``, ``local``).
    wiki: str
    #: pywikibot ``family:code``; ignored when ``api_url`` is set.
    site: str = "wikipedia:en"
    api_url: str = ""
    user: str = ""
    password_file: str = ""

    @property
    def family_code(self) -> tuple[str, str]:
        if self.api_url:
            name = API_FAMILY_PREFIX + re.sub(r"[^a-z0-9]+", "", self.wiki.lower())
            return name, name
        family, sep, code = self.site.partition(":")
        if not sep or not family or not code:
            raise ConfigError(f"bot site must be family:code (e.g. wikipedia:en), not {self.site!r}")
        return family, code


def configure_pywikibot(spec: SiteSpec) -> None:
    """Make the spec pywikibot's default site, *before* ``pywikibot.handle_args``.

    ``handle_args`` opens the default site itself, and its global options (``-site``,
    ``-family``, ``-lang``, ``-user``) then override what is set here, as in any pywikibot script.
    """
    from pywikibot import config

    family, code = spec.family_code
    if spec.api_url:
        if not re.match(r"^https?://[^/]+/(.*/)?api\.php$", spec.api_url):
            raise ConfigError(f"bot api_url must be the URL of a wiki's api.php, not {spec.api_url!r}")
        config.family_files[family] = spec.api_url
    config.family, config.mylang = family, code
    if spec.user:
        config.usernames[family][code] = spec.user
    if spec.password_file:
        if not Path(spec.password_file).is_file():
            raise ConfigError(f"bot password_file not found: {spec.password_file}")
        config.password_file = spec.password_file


def open_site(spec: SiteSpec, login: bool = True) -> APISite:
    """pywikibot's default site (the spec, unless global options changed it), logged in."""
    import pywikibot
    from pywikibot.exceptions import Error as PywikibotError

    family, code = spec.family_code
    try:
        site = pywikibot.Site()
        if login:
            site.login()
    except PywikibotError as exc:
        raise ConfigError(f"cannot open wiki {spec.wiki} ({family}:{code}): {exc}") from exc
    except (OSError, EOFError) as exc:  # unreachable host; a password prompt with no terminal
        raise ConfigError(f"cannot open wiki {spec.wiki} ({family}:{code}): {type(exc).__name__}: {exc}") from exc
    log.info("using %s as %s", site, site.username() or "anonymous")
    return site

"""Install or update the Side gadget on a wiki, through pywikibot.

Usage::

    python -m gadget.deploy [--api URL | --site FAMILY:CODE] [--user NAME]
                            [--service-url URL] [--summary TEXT] [--dry-run]

The wiki is ``--site`` (a pywikibot family and code, ``wikipedia:xx``), ``--api`` (the
``api.php`` URL of any wiki, e.g. a local or staging one; pywikibot builds a family for it) or,
with neither, the default site of pywikibot's ``user-config.py`` (``family``, ``mylang``). The
account is ``--user`` or ``usernames`` in ``user-config.py`` (for an ``--api`` wiki:
``usernames['*']['*']``). The password is never on the command line:
pywikibot logs in with the BotPassword of its password file, as every pywikibot script does,
``('Name', BotPassword('side-deploy', '...'))`` in ``user-password.py`` (chmod 600), named by
``password_file`` in ``user-config.py``; ``PYWIKIBOT_DIR`` says where those two files are.

What it writes (only pages whose text changed):

* every page named in ``gadget/gadget-definition.txt`` as ``MediaWiki:Gadget-<page>``:
  the ``.js``/``.css`` files of ``gadget/src/``, ``side-config.json`` (with ``apiUrl`` set to
  ``--service-url`` when given) and ``side-messages.json``, every language of ``gadget/i18n/``
  by code (``{"en": {...}, "de": {...}}``; the gadget picks the user's language, English beneath);
* ``MediaWiki:Gadget-side``, the description shown on Special:Preferences, and its translations
  ``MediaWiki:Gadget-side/<code>``;
* the definition line in ``MediaWiki:Gadgets-definition``: an existing ``* side[...]`` line is
  replaced, otherwise the line is added under ``== editing-gadgets ==`` (created if missing).
  The rest of the page is kept as it is.

Every page is saved with pywikibot's ``Page.save``, so maxlag, throttling (``put_throttle``)
and retries are pywikibot's. Each edit is based on the revision read when the deploy started:
if someone saves one of the pages in between, MediaWiki refuses the edit as an edit conflict
(a page planned as new is created only if it is still missing); the deploy keeps their
version, names the page and who saved it, writes the other pages, and exits with status 1.

Editing ``MediaWiki:`` JavaScript and CSS needs the interface-admin group; create a
BotPassword (Special:BotPasswords) with the grants "Edit the MediaWiki namespace and sitewide/
user JSON" and "Edit sitewide and user CSS/JS" (``editsiteconfig``) plus "High-volume editing";
the deploy checks these rights before it writes anything.

``--dry-run`` logs in nowhere and writes nothing: it prints each page it would write, and when
a wiki is given (or user-config.py names one) it also reads the wiki to say which would change.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from pywikibot.site import APISite

logger = logging.getLogger(__name__)

GADGET_DIR = Path(__file__).resolve().parent
DEFINITION_FILE = GADGET_DIR / "gadget-definition.txt"
SOURCE_DIR = GADGET_DIR / "src"
MESSAGES_DIR = GADGET_DIR / "i18n"
#: Gadget name, as in ``* side[...]`` and the ``MediaWiki:Gadget-side`` description page.
GADGET_NAME = "side"
#: The package file built from i18n/ instead of read from src/.
MESSAGES_PAGE = "side-messages.json"
CONFIG_PAGE = "side-config.json"
SECTION = "editing-gadgets"
DEFAULT_SUMMARY = "Update the Side gadget (gadget/deploy.py)"
DEFINITION_PAGE = "MediaWiki:Gadgets-definition"
#: Name of the pywikibot family (an AutoFamily) registered for an --api URL.
API_FAMILY = "side-deploy"
#: What the deploy edits: the MediaWiki namespace, and site-wide JS, CSS and JSON.
NEEDED_RIGHTS = ("editinterface", "editsitejs", "editsitecss", "editsitejson")
PASSWORD_HELP = ("the password goes in pywikibot's password file, as ('NAME', BotPassword('side-deploy', "
                 "'PASSWORD')) in user-password.py (chmod 600), named by password_file in user-config.py, both in "
                 "PYWIKIBOT_DIR (see gadget/README.md)")
#: The CSS-only Codex module the gadget depends on: its UI is Codex classes on plain DOM, no Vue.
CODEX_STYLES = "codex-styles"
#: MediaWiki older than this has no ``codex-styles``; the definition written there names
#: :data:`CODEX_FULL` instead, the full Codex module (Vue included) that carries the same CSS.
CODEX_STYLES_SINCE = (1, 41)
CODEX_FULL = "@wikimedia/codex"
EXIT_FAILED = 1
EXIT_USAGE = 2


class DeployError(RuntimeError):
    """The wiki refused a login or an edit, or the gadget files are inconsistent."""


@dataclass(frozen=True)
class Page:
    title: str
    text: str


def definition_line(path: Path = DEFINITION_FILE) -> str:
    """The versioned ``* side[...]|page|page`` line."""
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if len(lines) != 1 or not lines[0].startswith(f"* {GADGET_NAME}["):
        raise DeployError(f"{path} must hold exactly one '* {GADGET_NAME}[...]' line")
    return lines[0]


def line_for_wiki(line: str, version: str | None) -> str:
    """The definition ``line`` for a wiki running MediaWiki ``version`` (``1.39.17``, ``1.45.0-wmf.3``;
    None when not known): as versioned, but with :data:`CODEX_FULL` before MediaWiki 1.41."""
    found = re.match(r"\D*(\d+)\.(\d+)", version or "")
    if not found or (int(found[1]), int(found[2])) >= CODEX_STYLES_SINCE:
        return line
    options, _, pages = line.partition("]")
    return re.sub(rf"(?<=[=,]){re.escape(CODEX_STYLES)}(?=[,|]|$)", CODEX_FULL, options) + "]" + pages


def definition_pages(line: str) -> list[str]:
    """Page names after the options: ``side.js``, ``side-refs.js`` ..."""
    return [part.strip() for part in line.split("]", 1)[1].split("|") if part.strip()]


def language_messages(folder: Path = MESSAGES_DIR) -> dict[str, dict[str, str]]:
    """Each language's messages by code, English first; the documentation (qqq) left out."""
    messages = {}
    for path in sorted(folder.glob("*.json"), key=lambda p: (p.stem != "en", p.stem)):
        if path.stem != "qqq":
            texts = json.loads(path.read_text(encoding="utf-8"))
            texts.pop("@metadata", None)
            messages[path.stem] = texts
    return messages


def messages_json(folder: Path = MESSAGES_DIR) -> str:
    return json.dumps(language_messages(folder), ensure_ascii=False, indent="\t") + "\n"


def config_json(service_url: str | None) -> str:
    config = json.loads((SOURCE_DIR / CONFIG_PAGE).read_text(encoding="utf-8"))
    if service_url:
        config["apiUrl"] = service_url.rstrip("/")
    return json.dumps(config, ensure_ascii=False, indent="\t") + "\n"


def gadget_pages(service_url: str | None = None) -> list[Page]:
    """Every page of the gadget, with the text it should have."""
    line = definition_line()
    pages = []
    for name in definition_pages(line):
        if name == MESSAGES_PAGE:
            text = messages_json()
        elif name == CONFIG_PAGE:
            text = config_json(service_url)
        else:
            path = SOURCE_DIR / name
            if not path.is_file():
                raise DeployError(f"{DEFINITION_FILE.name} names {name}, which is not in {SOURCE_DIR}")
            text = path.read_text(encoding="utf-8")
        pages.append(Page(f"MediaWiki:Gadget-{name}", text))
    for lang, texts in language_messages().items():
        if "side-gadget-description" in texts:
            suffix = "" if lang == "en" else f"/{lang}"
            pages.append(Page(f"MediaWiki:Gadget-{GADGET_NAME}{suffix}", texts["side-gadget-description"]))
    return pages


def merge_definition(current: str, line: str) -> str:
    """``MediaWiki:Gadgets-definition`` with Side's line replaced or added, the rest untouched."""
    pattern = re.compile(rf"^\*\s*{re.escape(GADGET_NAME)}\s*\[.*$", re.MULTILINE)
    if pattern.search(current):
        return pattern.sub(lambda _: line, current, count=1)
    heading = re.compile(rf"^==\s*{re.escape(SECTION)}\s*==\s*$", re.MULTILINE)
    match = heading.search(current)
    if match:
        return current[: match.end()] + "\n" + line + current[match.end():]
    prefix = current.rstrip("\n") + "\n\n" if current.strip() else ""
    return f"{prefix}== {SECTION} ==\n{line}\n"


class UsageError(DeployError):
    """The command line names no usable wiki (a malformed --api URL, an unknown --site)."""


class DeployConflict(DeployError):
    """Someone saved gadget pages while the deploy ran; their versions were kept."""

    def __init__(self, titles: list[str]) -> None:
        self.titles = titles
        pages = ", ".join(titles)
        super().__init__(f"edit conflict on {pages}: saved by someone else while this deploy ran, and left as they "
                         "saved it; look at their change, then run the deploy again")


@dataclass(frozen=True)
class Step:
    """One page of the gadget and what the deploy does with it."""

    page: Page
    #: "create", "update", "unchanged", or "write" (no wiki was read).
    state: str
    #: The wiki's page as read when planning (a ``pywikibot.Page``): the edit is based on its revision.
    current: Any = None


def _text(page: Any) -> str | None:
    """Text of a pywikibot page as read, None when it does not exist."""
    return page.text if page.exists() else None


def plan(site: APISite | None, service_url: str | None) -> list[Step]:
    """Each page with what happens to it, the wiki's pages read in one batch (none without a site)."""
    pages = gadget_pages(service_url)
    if site is None:
        return [Step(page, "write") for page in pages] + [Step(Page(DEFINITION_PAGE, definition_line()), "write")]
    import pywikibot

    current = {title: pywikibot.Page(site, title) for title in [page.title for page in pages] + [DEFINITION_PAGE]}
    for _ in site.preloadpages(current.values()):  # texts and latest revisions, 50 titles a request
        pass
    line = line_for_wiki(definition_line(), str(site.mw_version))
    pages.append(Page(DEFINITION_PAGE, merge_definition(_text(current[DEFINITION_PAGE]) or "", line)))
    steps = []
    for page in pages:
        old = _text(current[page.title])
        state = "create" if old is None else "unchanged" if old.rstrip("\n") == page.text.rstrip("\n") else "update"
        steps.append(Step(page, state, current[page.title]))
    return steps


def _line(state: str, page: Page, dry_run: bool = False) -> str:
    verb = f"would {state}" if dry_run and state != "unchanged" else state
    return f"{verb:>16}  {page.title} ({len(page.text.encode('utf-8'))} bytes)"


def _who_saved(step: Step) -> str:
    """Who saved the page since the deploy read it (for the conflict report)."""
    import pywikibot

    try:
        revision = pywikibot.Page(step.current.site, step.page.title).latest_revision
    except pywikibot.exceptions.Error:
        return "someone else"
    return f"{revision.user} at {revision.timestamp.isoformat()}"


def _saved_since_read(step: Step) -> bool:
    """Whether someone saved the page after ``plan`` read it.

    MediaWiki detects an edit conflict from ``basetimestamp``, which has one-second resolution:
    an edit made in the same second as the revision the deploy read goes unnoticed. Comparing
    the current revision id with the one read closes that gap (save() still sends the base
    timestamp for what happens between this check and the save).
    """
    import pywikibot

    if step.state != "update":
        return False
    fresh = pywikibot.Page(step.current.site, step.page.title)
    return fresh.exists() and fresh.latest_revision_id != step.current.latest_revision_id


def write(steps: list[Step], summary: str = DEFAULT_SUMMARY, out: TextIO = sys.stdout) -> None:
    """Save each changed page, based on the revision ``plan`` read; conflicts are reported, never overwritten."""
    from pywikibot.exceptions import EditConflictError, Error, NoCreateError

    conflicts = []
    for step in steps:
        print(_line(step.state, step.page), file=out, flush=True)
        if step.state not in ("create", "update"):
            continue
        page = step.current
        page.text = step.page.text
        try:
            if _saved_since_read(step):
                raise EditConflictError(page)
            page.save(summary=summary, minor=False, bot=False, quiet=True,
                      createonly=step.state == "create", nocreate=step.state == "update")
        except (EditConflictError, NoCreateError):
            conflicts.append(step.page.title)
            print(f"{'conflict':>16}  {step.page.title}: saved by {_who_saved(step)} after this deploy read it; "
                  "left as they saved it", file=out, flush=True)
        except Error as exc:
            raise DeployError(f"could not save {step.page.title}: {exc}") from exc
    if conflicts:
        raise DeployConflict(conflicts)


def deploy(site: APISite | None, service_url: str | None = None, dry_run: bool = False,
           summary: str = DEFAULT_SUMMARY, out: TextIO = sys.stdout) -> list[Step]:
    """Write the gadget (or, with ``dry_run``, print what would be written); returns the plan."""
    steps = plan(site, service_url)
    if not dry_run:
        if site is None:
            raise DeployError("no wiki to write to (or use --dry-run)")
        check_rights(site)
        write(steps, summary, out)
        return steps
    for step in steps:
        print(_line(step.state, step.page, dry_run=True), file=out)
        if step.page.title == DEFINITION_PAGE:
            print(f"{'':>16}  {definition_line()}", file=out)
    return steps


def check_rights(site: APISite) -> None:
    """Refuse before the first edit when the login cannot edit every gadget page."""
    missing = [right for right in NEEDED_RIGHTS if not site.has_right(right)]
    if missing:
        raise DeployError(f"{site.username()} on {site} lacks {', '.join(missing)}: the account needs the "
                          "interface-admin group, and its BotPassword the grants editsiteconfig (Edit sitewide "
                          "and user CSS/JS, Edit the MediaWiki namespace) and editpage/createeditmovepage")


# -- command line -------------------------------------------------------------------------------

def open_wiki(api: str | None, site_name: str | None, user: str | None, login: bool) -> APISite | None:
    """The wiki, through pywikibot: ``--api``, ``--site`` or user-config.py's default site.

    None when nothing names a wiki and this is a dry run (it then only lists the pages).
    """
    import pywikibot
    from pywikibot import config
    from pywikibot.exceptions import Error, SiteDefinitionError

    try:
        if api:
            if not re.match(r"^https?://[^/]+/(.*/)?api\.php$", api):
                raise UsageError(f"--api must be the URL of a wiki's api.php, not {api!r}")
            config.family_files[API_FAMILY] = api
            site = pywikibot.Site(API_FAMILY, API_FAMILY, user=user)
        else:
            site = pywikibot.Site(site_name, user=user) if site_name else pywikibot.Site(user=user)
    except SiteDefinitionError as exc:
        if site_name:
            raise UsageError(f"--site {site_name}: {exc}") from exc
        if not (api or login):
            return None
        raise DeployError(f"no wiki to deploy to ({exc}): give --api URL or --site FAMILY:CODE, or set family "
                          f"and mylang in {Path(config.base_dir, 'user-config.py')}") from exc
    except (Error, OSError) as exc:
        raise DeployError(f"cannot reach the wiki: {exc}") from exc
    if login:
        _login(site)
    return site


def _login(site: APISite) -> None:
    """Log in with the password file's BotPassword; a missing password fails instead of prompting."""
    from pywikibot import config
    from pywikibot.exceptions import Error
    from pywikibot.login import LoginManager

    if not site.username():
        raise DeployError(f"no account for {site}: give --user NAME or set usernames in user-config.py")
    if not config.password_file:
        raise DeployError(f"no password file: {PASSWORD_HELP}")
    try:  # pywikibot's own reading of the password file; it would prompt for a password it lacks
        password = LoginManager(site=site, user=site.username()).password
    except (OSError, ValueError) as exc:
        raise DeployError(f"cannot read the password file {config.password_file}: {exc}") from exc
    if not password:
        raise DeployError(f"no password for {site.username()} in {config.password_file}: {PASSWORD_HELP}")
    try:
        site.login()
    except (Error, OSError) as exc:
        raise DeployError(f"cannot log in to {site} as {site.username()}: {exc}") from exc


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (exit status 2)."""

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m gadget.deploy", description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--api", help="the wiki's api.php URL")
    where.add_argument("--site", help="pywikibot family:code, e.g. wikipedia:xx (default: user-config.py's)")
    parser.add_argument("--user", help="account name (default: usernames in user-config.py)")
    parser.add_argument("--password", nargs="?", const="", help=argparse.SUPPRESS)
    parser.add_argument("--service-url", help="Side service the gadget calls (default: side-config.json's apiUrl)")
    parser.add_argument("--summary", default=DEFAULT_SUMMARY, help="edit summary")
    parser.add_argument("--dry-run", action="store_true", help="print what would be written, write nothing")
    args = parser.parse_args(argv)
    if args.password is not None:
        parser.error(f"--password is not accepted: {PASSWORD_HELP}")
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from pywikibot.exceptions import Error as PywikibotError

    try:
        site = open_wiki(args.api, args.site, args.user, login=not args.dry_run)
        deploy(site, args.service_url, args.dry_run, args.summary)
    except UsageError as error:
        parser.error(str(error))
    except DeployError as error:
        print(f"deploy failed: {error}", file=sys.stderr)
        return EXIT_FAILED
    except PywikibotError as error:  # reading the pages or the account's rights
        print(f"deploy failed: {type(error).__name__}: {error}", file=sys.stderr)
        return EXIT_FAILED
    return 0


if __name__ == "__main__":
    sys.exit(main())

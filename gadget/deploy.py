"""Install or update the Side gadget on a wiki through the Action API.

Usage::

    python -m gadget.deploy --api https://xx.wikipedia.org/w/api.php \\
        --user 'Name@side-deploy' --password BOTPASSWORD [--service-url URL] [--dry-run]

What it writes (only pages whose text changed):

* every page named in ``gadget/gadget-definition.txt`` as ``MediaWiki:Gadget-<page>``:
  the ``.js``/``.css`` files of ``gadget/src/``, ``side-config.json`` (with ``apiUrl`` set to
  ``--service-url`` when given) and ``side-messages.json``, built from ``gadget/i18n/en.json``;
* ``MediaWiki:Gadget-side``, the description shown on Special:Preferences;
* the definition line in ``MediaWiki:Gadgets-definition``: an existing ``* side[...]`` line is
  replaced, otherwise the line is added under ``== editing-gadgets ==`` (created if missing).
  The rest of the page is kept as it is.

Editing ``MediaWiki:`` JavaScript and CSS needs the interface-admin group; create a
BotPassword (Special:BotPasswords) with the grants "Edit the MediaWiki namespace and sitewide/
user JSON" and "Edit sitewide and user CSS/JS" (``editsiteconfig``) plus "High-volume editing".

``--dry-run`` logs in nowhere and writes nothing: it prints each page it would write, and
with ``--api`` it also reads the wiki to say which pages would change.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import requests

logger = logging.getLogger(__name__)

GADGET_DIR = Path(__file__).resolve().parent
DEFINITION_FILE = GADGET_DIR / "gadget-definition.txt"
SOURCE_DIR = GADGET_DIR / "src"
MESSAGES_FILE = GADGET_DIR / "i18n" / "en.json"
#: Gadget name, as in ``* side[...]`` and the ``MediaWiki:Gadget-side`` description page.
GADGET_NAME = "side"
#: The package file built from i18n/en.json instead of read from src/.
MESSAGES_PAGE = "side-messages.json"
CONFIG_PAGE = "side-config.json"
SECTION = "editing-gadgets"
DEFAULT_SUMMARY = "Update the Side gadget (gadget/deploy.py)"
USER_AGENT = "SideGadgetDeploy/0.1 (gadget/deploy.py)"


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


def definition_pages(line: str) -> list[str]:
    """Page names after the options: ``side.js``, ``side-refs.js`` ..."""
    return [part.strip() for part in line.split("]", 1)[1].split("|") if part.strip()]


def messages_json(path: Path = MESSAGES_FILE) -> str:
    messages = json.loads(path.read_text(encoding="utf-8"))
    messages.pop("@metadata", None)
    return json.dumps(messages, ensure_ascii=False, indent="\t") + "\n"


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
    description = json.loads(MESSAGES_FILE.read_text(encoding="utf-8"))["side-gadget-description"]
    pages.append(Page(f"MediaWiki:Gadget-{GADGET_NAME}", description))
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


class Wiki:
    """The few Action API calls the deploy needs."""

    def __init__(self, api: str, session: requests.Session | None = None) -> None:
        self.api = api
        self.session = session or requests.Session()
        self.session.headers["User-Agent"] = USER_AGENT

    def call(self, params: dict[str, str], post: bool = False) -> dict:
        params = {**params, "format": "json", "formatversion": "2"}
        if post:
            response = self.session.post(self.api, data=params, timeout=60)
        else:
            response = self.session.get(self.api, params=params, timeout=60)
        response.raise_for_status()
        data = response.json()
        if "error" in data:
            raise DeployError(f"{params.get('action')}: {data['error'].get('info', data['error'])}")
        return data

    def login(self, user: str, password: str) -> None:
        token = self.call({"action": "query", "meta": "tokens", "type": "login"})["query"]["tokens"]["logintoken"]
        answer = self.call({"action": "login", "lgname": user, "lgpassword": password, "lgtoken": token},
                           post=True)["login"]
        if answer.get("result") != "Success":
            raise DeployError(f"login as {user} failed: {answer.get('reason', answer.get('result'))}")

    def texts(self, titles: list[str]) -> dict[str, str | None]:
        """Current text of each page (None when missing), 50 titles per request."""
        found: dict[str, str | None] = {}
        for start in range(0, len(titles), 50):
            data = self.call({"action": "query", "prop": "revisions", "rvprop": "content", "rvslots": "main",
                              "titles": "|".join(titles[start:start + 50])})
            for page in data["query"].get("pages", []):
                revisions = page.get("revisions")
                found[page["title"]] = revisions[0]["slots"]["main"]["content"] if revisions else None
        return found

    def edit(self, title: str, text: str, summary: str, token: str) -> None:
        answer = self.call({"action": "edit", "title": title, "text": text, "summary": summary,
                            "token": token}, post=True)["edit"]
        if answer.get("result") != "Success":
            raise DeployError(f"edit of {title} failed: {answer}")

    def csrf_token(self) -> str:
        return self.call({"action": "query", "meta": "tokens"})["query"]["tokens"]["csrftoken"]


def plan(wiki: Wiki | None, service_url: str | None) -> list[tuple[Page, str]]:
    """Each page with what happens to it: "create", "update", "unchanged" or "write" (no wiki)."""
    pages = gadget_pages(service_url)
    definition = "MediaWiki:Gadgets-definition"
    if wiki is None:
        return [(page, "write") for page in pages] + [(Page(definition, definition_line()), "write")]
    current = wiki.texts([page.title for page in pages] + [definition])
    pages.append(Page(definition, merge_definition(current.get(definition) or "", definition_line())))
    steps = []
    for page in pages:
        old = current.get(page.title)
        state = "create" if old is None else "unchanged" if old.rstrip("\n") == page.text.rstrip("\n") else "update"
        steps.append((page, state))
    return steps


def deploy(api: str | None, user: str | None, password: str | None, service_url: str | None = None,
           dry_run: bool = False, summary: str = DEFAULT_SUMMARY, out=sys.stdout) -> list[tuple[Page, str]]:
    """Write the gadget (or, with ``dry_run``, print what would be written); returns the plan."""
    wiki = Wiki(api) if api else None
    if not dry_run:
        if wiki is None or not user or not password:
            raise DeployError("--api, --user and --password are needed (or use --dry-run)")
        wiki.login(user, password)
    steps = plan(wiki, service_url)
    token = None if dry_run else wiki.csrf_token()
    for page, state in steps:
        verb = f"would {state}" if dry_run and state != "unchanged" else state
        print(f"{verb:>16}  {page.title} ({len(page.text.encode('utf-8'))} bytes)", file=out)
        if dry_run and page.title.endswith("Gadgets-definition"):
            print(f"{'':>16}  {definition_line()}", file=out)
        if not dry_run and state in ("create", "update"):
            wiki.edit(page.title, page.text, summary, token)
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gadget.deploy", description=__doc__.split("\n\n")[0])
    parser.add_argument("--api", help="the wiki's api.php URL")
    parser.add_argument("--user", help="BotPassword login name, e.g. Name@side-deploy")
    parser.add_argument("--password", help="BotPassword password")
    parser.add_argument("--service-url", help="Side service the gadget calls (default: side-config.json's apiUrl)")
    parser.add_argument("--summary", default=DEFAULT_SUMMARY, help="edit summary")
    parser.add_argument("--dry-run", action="store_true", help="print what would be written, write nothing")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        deploy(args.api, args.user, args.password, args.service_url, args.dry_run, args.summary)
    except (DeployError, requests.RequestException) as error:
        print(f"deploy failed: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

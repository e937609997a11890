"""A real MediaWiki on 127.0.0.1 for the bot, ``side verify --wiki`` and gadget tests.

Debian's ``mediawiki`` package (1.39, with Cite, Gadgets, WikiEditor and VisualEditor; Parsoid
from core) is served read-only from ``/usr/share/mediawiki`` by PHP's
built-in server with SQLite; only ``LocalSettings.php`` and the database live in a temporary
folder (``MW_CONFIG_FILE`` points the entry points at it). Nothing is mocked: tests edit pages
through the Action API as real accounts, and the bot reads recent changes like on Wikipedia.
The recipe and its gotchas are in ``../shared/notes/local-mediawiki.md``; the ones that bit
are handled here: ``$wgJobRunRate = 0`` (no jobs at the end of web requests), no APCu, the
server started in its own process group (``PHP_CLI_SERVER_WORKERS`` children outlive a plain
SIGTERM), ``-d memory_limit=512M``, and BotPasswords from ``[0-9a-w]`` only.

Usage::

    def test_something(mediawiki):
        revision = mediawiki.edit("Foo", "Text.<ref>[http://example.org A]</ref>", user="Alice")
        site = mediawiki.pywikibot_site()          # logged in as TestBot (BotPassword)

``start_mediawiki(folder, headers={...})`` serves a wiki of its own whose every page sends
those HTTP headers (tests/test_gadget_liftwing_e2e.py: Wikipedia's Content-Security-Policy).

``start_mediawiki(folder, oauth=True)`` also runs the OAuth extension (REL1_39, unpacked from
tests/fixtures/mediawiki-oauth.tar.xz, see its SOURCE.md): ``create_oauth_consumer`` registers
and approves a consumer with the extension's own maintenance script, and ``oauth_allow`` is a
user's "Allow" click on ``Special:OAuth/authenticate`` (tests/test_dashboard_login.py).

Outside CI the fixture skips when MediaWiki or PHP is not installed (``scripts/install.sh``
installs them); in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import contextlib
import html
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from harness import free_port

#: Where Debian's ``mediawiki`` package installs the code (the read-only docroot).
MEDIAWIKI_ROOT = Path(os.environ.get("SIDE_MEDIAWIKI_ROOT", "/usr/share/mediawiki"))
#: Name of the pywikibot AutoFamily (and site code) registered for the local wiki.
FAMILY = "localwiki"
#: The OAuth extension and the PHP library its OAuth 1.0a endpoints load (see its SOURCE.md).
OAUTH_ARCHIVE = Path(__file__).resolve().parent.parent / "fixtures" / "mediawiki-oauth.tar.xz"
OAUTH_SETTINGS = """
# --- OAuth extension, added by tests/harness/mediawiki.py (enable_oauth) ---
wfLoadExtension( 'OAuth', 'EXTENSION_JSON' );
# The test wiki is served over plain http on 127.0.0.1; Wikimedia's wikis are https only.
$wgMWOAuthSecureTokenTransfer = false;
# Consumers are proposed and approved by Admin (createOAuthConsumer.php needs an e-mail address,
# taken as confirmed without sending mail).
$wgEmailAuthentication = false;
$wgGroupPermissions['sysop']['mwoauthproposeconsumer'] = true;
$wgGroupPermissions['sysop']['mwoauthmanageconsumer'] = true;
$wgGroupPermissions['sysop']['mwoauthupdateownconsumer'] = true;
"""
#: BotPassword application id of TestBot (log in as ``TestBot@pwb``).
BOT_APP = "pwb"
STUB_PAGES = {
    # No CS1 Lua modules offline: a stub keeps {{cite web}} readable on rendered pages.
    "Template:Cite web": '<span class="citation">[{{{url}}} {{{title|{{{url}}}}}}]</span>'
                         "<noinclude>Stub of Wikipedia's CS1 template for local tests.</noinclude>",
    "Template:Bots": "<noinclude>Bot exclusion (no output), as on Wikipedia.</noinclude>",
    "Template:Nobots": "<noinclude>Bot exclusion (no output), as on Wikipedia.</noinclude>",
}
EXTRA_SETTINGS = """
# --- added by tests/harness/mediawiki.py ---
$wgEnableEmail = false;
$wgShowExceptionDetails = true;
$wgAllowUserJs = true;
$wgAllowUserCss = true;
$wgEnableUploads = false;
$wgUseImageMagick = false;
# Jobs would otherwise run at the end of random web requests: keep tests deterministic.
$wgJobRunRate = 0;
# Tests and benchmarks edit faster than a newbie may (8 edits/min); Wikipedia's bots have the right too.
$wgGroupPermissions['user']['noratelimit'] = true;
# VisualEditor edits through Parsoid, which 1.39 bundles in core (vendor/wikimedia/parsoid) and
# runs in-process: VE's API (action=visualeditor) calls it directly, no Parsoid service or RESTBase.
wfLoadExtension( 'Parsoid', "$IP/vendor/wikimedia/parsoid/extension.json" );
$wgDefaultUserOptions['visualeditor-enable'] = 1;
$wgVisualEditorAvailableNamespaces = [ 0 => true ];
# Its first-use welcome dialog would cover both editors (and make the page behind it inert).
$wgVisualEditorShowBetaWelcome = false;
# Every recent change is also pushed as JSON over UDP (core RCFeed), the raw material of a local
# EventStreams stand-in; nothing needs to listen.
$wgRCFeeds['side-udp'] = [ 'formatter' => 'JSONRCFeedFormatter', 'uri' => 'udp://127.0.0.1:RC_FEED_PORT',
    'add_interwiki_prefix' => false, 'omit_bots' => false ];
# Settings a test changes for a while (MediaWiki.overriding): read on every request, so no cached
# copy of this file stands between a test and the wiki's answer.
$sideTestOverrides = __DIR__ . '/test-overrides.json';
if ( is_file( $sideTestOverrides ) ) {
    foreach ( json_decode( file_get_contents( $sideTestOverrides ), true ) as $sideName => $sideValue ) {
        $GLOBALS[$sideName] = $sideValue;
    }
}
"""


class MediaWikiError(RuntimeError):
    """The local wiki could not be set up, or an API call failed."""


@dataclass(frozen=True)
class Account:
    """A wiki account created by the fixture."""

    name: str
    password: str
    groups: tuple[str, ...] = ()
    #: BotPassword (``name@app``) for API logins, as bots on Wikimedia wikis use.
    bot_app: str = ""
    bot_password: str = ""

    @property
    def login_name(self) -> str:
        return f"{self.name}@{self.bot_app}" if self.bot_app else self.name

    @property
    def login_password(self) -> str:
        return self.bot_password if self.bot_app else self.password


def is_installed() -> tuple[bool, str]:
    """Whether MediaWiki and PHP with SQLite are here; the reason when not."""
    if not (MEDIAWIKI_ROOT / "maintenance" / "install.php").is_file():
        return False, f"MediaWiki not installed at {MEDIAWIKI_ROOT} (run scripts/install.sh)"
    if shutil.which("php") is None:
        return False, "php not installed (run scripts/install.sh)"
    return True, ""


class MediaWiki:
    """One throwaway wiki: install, serve, accounts, API helpers, pywikibot configuration."""

    def __init__(self, folder: Path, port: int | None = None, name: str = "Test Wiki",
                 headers: dict[str, str] | None = None) -> None:
        self.folder = Path(folder)
        #: HTTP headers every PHP response of the wiki sends (e.g. a Content-Security-Policy).
        self.headers = dict(headers or {})
        self.port = port or free_port()
        self.name = name
        self.url = f"http://127.0.0.1:{self.port}"
        self.api = f"{self.url}/api.php"
        self.index = f"{self.url}/index.php"
        self.data_dir = self.folder / "data"
        self.settings = self.folder / "LocalSettings.php"
        self.dbname = "testwiki"
        #: UDP port on 127.0.0.1 that receives every recent change as JSON ($wgRCFeeds).
        self.rc_feed_port = free_port(socket.SOCK_DGRAM)
        self.accounts: dict[str, Account] = {}
        #: The unpacked OAuth extension, once :meth:`enable_oauth` ran.
        self.oauth_extension: Path | None = None
        self._process: subprocess.Popen | None = None
        self._sessions: dict[str, requests.Session] = {}
        self._pywikibot_dirs: dict[str, Path] = {}

    # -- lifecycle --------------------------------------------------------------------------

    def install(self) -> None:
        """Run ``install.php`` into the folder and append the test settings."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        admin_password = "AdminPass-" + secrets.token_hex(8)
        self._php(str(MEDIAWIKI_ROOT / "maintenance" / "install.php"), "--quiet", "--dbtype", "sqlite",
                  "--dbpath", str(self.data_dir), "--dbname", self.dbname, "--server", self.url,
                  "--scriptpath", "", "--lang", "en", "--pass", admin_password, "--confpath", str(self.folder),
                  "--skins", "Vector", "--extensions", "Cite,Gadgets,WikiEditor,ParserFunctions,VisualEditor",
                  self.name, "Admin", config=False)
        with self.settings.open("a", encoding="utf-8") as fh:
            fh.write(EXTRA_SETTINGS.replace("RC_FEED_PORT", str(self.rc_feed_port)))
        self.accounts["Admin"] = Account("Admin", admin_password, ("sysop", "bureaucrat", "interface-admin"))

    def enable_oauth(self) -> None:
        """Unpack the OAuth extension beside the wiki, load it, and create its tables (update.php)."""
        extensions = self.folder / "extensions"
        extensions.mkdir(exist_ok=True)
        with tarfile.open(OAUTH_ARCHIVE) as archive:
            archive.extractall(extensions, filter="data")
        with self.settings.open("a", encoding="utf-8") as fh:
            fh.write(OAUTH_SETTINGS.replace("EXTENSION_JSON", str(extensions / "OAuth" / "extension.json")))
        self.run_maintenance("update.php", "--quick")
        self.oauth_extension = extensions / "OAuth"

    def create_oauth_consumer(self, callback: str, name: str = "Side", grants: tuple[str, ...] = ("basic",),
                              owner: str = "Admin") -> tuple[str, str]:
        """Register and approve an OAuth 1.0a consumer whose callbacks start with ``callback``
        (the extension's ``createOAuthConsumer.php``); returns its key and secret."""
        if self.oauth_extension is None:
            raise MediaWikiError("the OAuth extension is not enabled (start_mediawiki(..., oauth=True))")
        self.run_maintenance("resetUserEmail.php", "--no-reset-password", owner, f"{owner.lower()}@example.org")
        args = ["--user", owner, "--name", name, "--description", f"{name} (test consumer)", "--version", "1.0",
                "--callbackUrl", callback, "--callbackIsPrefix", "true", "--jsonOnSuccess", "--approve"]
        for grant in grants:
            args += ["--grants", grant]
        result = self._php(str(self.oauth_extension / "maintenance" / "createOAuthConsumer.php"), *args,
                           env={"MW_INSTALL_PATH": str(MEDIAWIKI_ROOT)})
        answer = json.loads(result.stdout.strip().splitlines()[-1] if result.stdout.strip() else "{}")
        if not answer.get("created") or answer.get("approved") != 1:
            raise MediaWikiError(f"OAuth consumer not created and approved: {answer}")
        return answer["key"], answer["secret"]

    def oauth_allow(self, session: requests.Session, authorize_url: str) -> str:
        """The logged-in user of ``session`` clicks "Allow" on the wiki's authorization page at
        ``authorize_url``; returns where the wiki sends the browser back (the consumer's callback)."""
        page = session.get(authorize_url, timeout=30)
        page.raise_for_status()
        form = re.search(r"<form[^>]*id='mw-mwoauth-authorize-form'[^>]*action='([^']*)'(.*?)</form>", page.text,
                         re.S)
        if form is None:
            raise MediaWikiError(f"no authorization form at {authorize_url}: {page.text[:500]}")
        fields = {}
        for tag in re.findall(r"<input\b[^>]*>", form.group(2)):
            name, value = re.search(r'\bname="([^"]*)"', tag), re.search(r'\bvalue="([^"]*)"', tag)
            if name and value and 'type="hidden"' in tag:
                fields[html.unescape(name.group(1))] = html.unescape(value.group(1))
        fields.update({"title": "Special:OAuth/authenticate", "accept": "Allow"})
        answer = session.post(self.url + html.unescape(form.group(1)), data=fields, allow_redirects=False,
                              timeout=30)
        if answer.status_code not in (301, 302, 303) or "Location" not in answer.headers:
            raise MediaWikiError(f"the wiki did not redirect after Allow ({answer.status_code}): {answer.text[:500]}")
        return answer.headers["Location"]

    @contextlib.contextmanager
    def overriding(self, **settings: Any) -> Iterator[None]:
        """MediaWiki's globals (``wgCanonicalServer="..."``) set to ``settings`` while the block runs.

        They are written to a JSON file that ``LocalSettings.php`` reads on every request, so the
        next request sees them and the one after the block does not.
        """
        path = self.folder / "test-overrides.json"
        scratch = path.with_suffix(".tmp")
        scratch.write_text(json.dumps(settings), encoding="utf-8")
        os.replace(scratch, path)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)

    def _prepend_headers(self) -> list[str]:
        """``php -d auto_prepend_file=`` options that make every PHP response send ``headers``
        (the header text exactly as written, before MediaWiki runs, rather than what MediaWiki's
        ``$wgCSPHeader`` would build from parts)."""
        if not self.headers:
            return []
        lines = ["<?php", "// Written by tests/harness/mediawiki.py: headers every response of the test wiki sends."]
        for name, value in self.headers.items():
            if any(c in name + value for c in "\r\n"):
                raise MediaWikiError(f"header {name!r} has a line break")
            line = f"{name}: {value}".replace("\\", "\\\\").replace("'", "\\'")
            lines.append(f"header('{line}');")
        path = self.folder / "headers.php"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return ["-d", f"auto_prepend_file={path}"]

    def start(self, timeout_s: float = 30.0) -> None:
        """Serve the wiki with ``php -S`` in its own process group and wait until it answers."""
        env = {**os.environ, "MW_CONFIG_FILE": str(self.settings), "PHP_CLI_SERVER_WORKERS": "4"}
        log = (self.folder / "server.log").open("ab")
        self._process = subprocess.Popen(
            ["php", "-d", "memory_limit=512M", *self._prepend_headers(), "-S", f"127.0.0.1:{self.port}",
             "-t", str(MEDIAWIKI_ROOT)],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()  # the server writes through its own copy of the descriptor
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise MediaWikiError(f"php -S exited with {self._process.returncode}; see {log.name}")
            try:
                if requests.get(self.api, params={"action": "query", "meta": "siteinfo", "format": "json"},
                                timeout=2).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.05)
        raise MediaWikiError(f"MediaWiki did not answer on {self.url} within {timeout_s:.0f} s")

    def stop(self) -> None:
        """Kill the server's whole process group (the workers too)."""
        if self._process is None:
            return
        try:
            os.killpg(self._process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
        self._process = None

    def create_accounts(self) -> None:
        """TestBot (bot group + BotPassword), Alice (a human editor) and Admin (created by install)."""
        bot_password = secrets.token_hex(16)  # BotPasswords must match [0-9a-w]{32,}
        self.run_maintenance("createAndPromote.php", "--bot", "TestBot", "BotPass-" + secrets.token_hex(8))
        self.run_maintenance("createBotPassword.php", "--appid", BOT_APP, "--grants",
                             "basic,highvolume,editpage,createeditmovepage,editprotected", "TestBot", bot_password)
        alice_password = "AlicePass-" + secrets.token_hex(8)
        self.run_maintenance("createAndPromote.php", "Alice", alice_password)
        self.accounts["TestBot"] = Account("TestBot", "", ("bot",), BOT_APP, bot_password)
        self.accounts["Alice"] = Account("Alice", alice_password)

    def add_account(self, name: str, groups: tuple[str, ...] = (), bot_app: str = "",
                    grants: str = "basic,highvolume,editpage,createeditmovepage") -> Account:
        """One more account, in ``groups``, with a BotPassword ``name@bot_app`` (``grants``) when
        ``bot_app`` is given; ``pywikibot_dir(name)`` then logs in with it."""
        password = f"{name}Pass-" + secrets.token_hex(8)
        self.run_maintenance("createAndPromote.php", *(["--custom-groups", ",".join(groups)] if groups else []),
                             name, password)
        bot_password = secrets.token_hex(16) if bot_app else ""  # BotPasswords must match [0-9a-w]{32,}
        if bot_app:
            self.run_maintenance("createBotPassword.php", "--appid", bot_app, "--grants", grants, name, bot_password)
        self.accounts[name] = Account(name, password, tuple(groups), bot_app, bot_password)
        return self.accounts[name]

    def seed(self) -> None:
        for title, text in STUB_PAGES.items():
            self.run_maintenance("edit.php", "-q", "-u", "Admin", "-s", "test stub", title, input=text)

    # -- command line -----------------------------------------------------------------------

    def _php(self, *args: str, input: str | None = None, config: bool = True,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        env = {**os.environ, **(env or {})}
        if config:
            env["MW_CONFIG_FILE"] = str(self.settings)
        result = subprocess.run(["php", "-d", "memory_limit=512M", *args], input=input, capture_output=True,
                                check=False, text=True, env=env, timeout=120)
        if result.returncode != 0:
            raise MediaWikiError(f"php {' '.join(args[:1])} failed ({result.returncode}): "
                                 f"{(result.stderr or result.stdout)[-2000:]}")
        return result

    def run_maintenance(self, script: str, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
        """Run ``maintenance/SCRIPT`` against this wiki (``runJobs.php``, ``edit.php`` ...)."""
        return self._php(str(MEDIAWIKI_ROOT / "maintenance" / script), *args, input=input)

    # -- Action API -------------------------------------------------------------------------

    @property
    def admin(self) -> Account:
        return self.accounts["Admin"]

    @property
    def bot(self) -> Account:
        return self.accounts["TestBot"]

    @property
    def alice(self) -> Account:
        return self.accounts["Alice"]

    def session(self, user: str | None = None) -> requests.Session:
        """A logged-in ``requests`` session for ``user`` (anonymous when None), cached."""
        key = user or ""
        if key not in self._sessions:
            session = requests.Session()
            session.headers["User-Agent"] = "SideTests/0.1 (tests/harness/mediawiki.py)"
            if user:
                self._login(session, self.accounts[user])
            self._sessions[key] = session
        return self._sessions[key]

    def log_in(self, session: requests.Session, user: str) -> None:
        """Log ``session`` (e.g. a test's stand-in for a browser) in to the wiki as ``user``."""
        self._login(session, self.accounts[user])

    def _login(self, session: requests.Session, account: Account) -> None:
        token = session.get(self.api, params={"action": "query", "meta": "tokens", "type": "login",
                                              "format": "json"}, timeout=30).json()
        token = token["query"]["tokens"]["logintoken"]
        answer = session.post(self.api, data={"action": "login", "lgname": account.login_name,
                                              "lgpassword": account.login_password, "lgtoken": token,
                                              "format": "json"}, timeout=30).json()
        if answer.get("login", {}).get("result") != "Success":
            raise MediaWikiError(f"login as {account.login_name} failed: {answer}")

    def call(self, params: dict[str, Any], user: str | None = None, post: bool = False) -> dict[str, Any]:
        """One Action API request (JSON, formatversion 2); raises on an API error."""
        session = self.session(user)
        params = {**params, "format": "json", "formatversion": "2"}
        if post:
            response = session.post(self.api, data=params, timeout=60)
        else:
            response = session.get(self.api, params=params, timeout=60)
        response.raise_for_status()
        data = response.json()
        if "error" in data:
            raise MediaWikiError(f"API error: {data['error']}")
        return data

    def token(self, user: str, kind: str = "csrf") -> str:
        return self.call({"action": "query", "meta": "tokens", "type": kind}, user)["query"]["tokens"][f"{kind}token"]

    def edit(self, title: str, text: str, user: str = "Alice", summary: str = "test edit", bot: bool = False,
             section: str | None = None, **extra: Any) -> int:
        """Save ``text`` to ``title`` as ``user`` through the API; returns the new revision id.

        ``bot=True`` flags the edit as a bot edit (only for accounts with the bot right), which
        is what ``rcshow=!bot`` filters on.
        """
        params = {"action": "edit", "title": title, "text": text, "summary": summary,
                  "token": self.token(user), **extra}
        if bot:
            params["bot"] = "1"
        if section is not None:
            params["section"] = section
        answer = self.call(params, user, post=True)["edit"]
        if answer.get("result") != "Success":
            raise MediaWikiError(f"edit of {title!r} failed: {answer}")
        return int(answer.get("newrevid") or answer.get("oldrevid") or 0)

    def edit_now(self, title: str, text: str, user: str = "Admin", summary: str = "test setup") -> None:
        """Save a page with ``maintenance/edit.php``: links tables are updated before it returns."""
        self.run_maintenance("edit.php", "-q", "-u", user, "-s", summary, title, input=text)

    def delete(self, title: str, reason: str = "test") -> None:
        self.call({"action": "delete", "title": title, "reason": reason, "token": self.token("Admin")},
                  "Admin", post=True)

    def move(self, title: str, new_title: str, reason: str = "test") -> None:
        self.call({"action": "move", "from": title, "to": new_title, "reason": reason, "noredirect": "1",
                   "token": self.token("Admin")}, "Admin", post=True)

    def page_text(self, title: str) -> str | None:
        """Current wikitext of a page, or None when it does not exist."""
        data = self.call({"action": "query", "prop": "revisions", "titles": title, "rvprop": "content",
                          "rvslots": "main"})
        page = data["query"]["pages"][0]
        if page.get("missing"):
            return None
        return page["revisions"][0]["slots"]["main"]["content"]

    def revisions(self, title: str) -> list[dict[str, Any]]:
        """All revisions of a page, oldest first (ids, user, comment, timestamp)."""
        data = self.call({"action": "query", "prop": "revisions", "titles": title, "rvlimit": "max",
                          "rvdir": "newer", "rvprop": "ids|user|comment|timestamp"})
        return data["query"]["pages"][0].get("revisions", [])

    def last_rc_timestamp(self) -> str:
        """Timestamp of the newest recent change (ISO 8601), e.g. to start a bot after setup."""
        data = self.call({"action": "query", "list": "recentchanges", "rclimit": "1", "rcprop": "timestamp|ids"})
        changes = data["query"]["recentchanges"]
        return changes[0]["timestamp"] if changes else "2000-01-01T00:00:00Z"

    # -- pywikibot --------------------------------------------------------------------------

    def pywikibot_dir(self, user: str = "TestBot") -> Path:
        """A PYWIKIBOT_DIR for this wiki: ``user-config.py`` (AutoFamily from the API URL, no
        throttling) and a private password file. Subprocesses use it through ``PYWIKIBOT_DIR``;
        each wiki and user gets a fresh one (cookies, API cache and throttle file live there)."""
        if user in self._pywikibot_dirs:
            return self._pywikibot_dirs[user]
        account = self.accounts[user]
        folder = self.folder / f"pywikibot-{user}"
        folder.mkdir(parents=True, exist_ok=True)
        password_file = folder / "user-password.py"
        if account.bot_app:
            line = f"({account.name!r}, BotPassword({account.bot_app!r}, {account.bot_password!r}))\n"
        else:
            line = f"({account.name!r}, {account.password!r})\n"
        password_file.write_text(line, encoding="utf-8")
        password_file.chmod(0o600)
        (folder / "user-config.py").write_text(
            "# Written by tests/harness/mediawiki.py for a throwaway local wiki.\n"
            f"family_files[{FAMILY!r}] = {self.api!r}\n"
            f"family = {FAMILY!r}\nmylang = {FAMILY!r}\n"
            f"usernames[{FAMILY!r}]['*'] = {account.name!r}\n"
            f"password_file = {str(password_file)!r}\n"
            "put_throttle = 0\nminthrottle = 0\nmaxthrottle = 1\nmax_retries = 2\nretry_wait = 1\n",
            encoding="utf-8")
        self._pywikibot_dirs[user] = folder
        return folder

    def pywikibot_env(self, user: str = "TestBot") -> dict[str, str]:
        """Environment for a subprocess that runs pywikibot against this wiki."""
        return {**os.environ, "PYWIKIBOT_DIR": str(self.pywikibot_dir(user)), "PYWIKIBOT_NO_USER_CONFIG": "2"}

    def pywikibot_site(self, user: str = "TestBot", login: bool = True):
        """Configure pywikibot in this process at runtime (no user-config needed) and return the
        logged-in ``pywikibot.Site`` for this wiki.

        pywikibot reads its configuration once, at import, so the settings are applied to
        ``pywikibot.config`` directly; ``base_dir`` moves to a fresh folder so cookies and the
        API cache never leak between wikis.
        """
        folder = self.pywikibot_dir(user)
        if "pywikibot" not in sys.modules:
            os.environ.setdefault("PYWIKIBOT_DIR", str(folder))
            os.environ.setdefault("PYWIKIBOT_NO_USER_CONFIG", "2")
        import pywikibot
        from pywikibot import config

        config.base_dir = str(folder)
        config.family_files[FAMILY] = self.api
        config.usernames[FAMILY]["*"] = user
        config.password_file = str(folder / "user-password.py")
        config.put_throttle = 0
        config.minthrottle = 0
        config.maxthrottle = 1
        config.max_retries = 2
        config.retry_wait = 1
        site = pywikibot.Site(FAMILY, FAMILY, user=user)
        if login:
            site.login()
        return site


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI must run the MediaWiki tests")
    pytest.skip(reason)


def require_mediawiki() -> None:
    """Skip the test (fail it in CI) when MediaWiki or PHP is not installed."""
    ok, reason = is_installed()
    if not ok:
        _fail_or_skip(reason)


def start_mediawiki(folder: Path, headers: dict[str, str] | None = None, oauth: bool = False) -> MediaWiki:
    """Install, serve and seed a wiki in ``folder`` (about 4 s); stop it with ``.stop()``.
    ``headers`` are sent with every PHP response (see :meth:`MediaWiki._prepend_headers`);
    ``oauth`` loads the OAuth extension (:meth:`MediaWiki.enable_oauth`, a few seconds more)."""
    wiki = MediaWiki(folder, headers=headers)
    wiki.install()
    if oauth:
        wiki.enable_oauth()
    wiki.start()
    try:
        wiki.create_accounts()
        wiki.seed()
    except BaseException:
        wiki.stop()
        raise
    return wiki


@pytest.fixture(scope="session")
def mediawiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaWiki]:
    """A real MediaWiki for the whole test session (``.url``, ``.api``, ``.edit`` ...)."""
    require_mediawiki()
    wiki = start_mediawiki(tmp_path_factory.mktemp("mediawiki"))
    try:
        yield wiki
    finally:
        wiki.stop()

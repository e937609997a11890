"""The editor gadget end to end: a real MediaWiki, the real service and worker, real Chromium.

The wiki (Debian's MediaWiki 1.39 with Gadgets, WikiEditor and Cite) gets the gadget through
``python -m gadget.deploy`` as an interface admin would install it (pywikibot, BotPassword):
``MediaWiki:Gadgets-definition`` plus the ``MediaWiki:Gadget-side*`` package pages. An editor
account turns the gadget on in its preferences and opens ``action=edit`` on an article with
two citations, served by a local HTTP server:

* the good one cites a page that says what the sentence says;
* the bad one cites a weather report; the worker's evidence index holds a page that does
  support the sentence, which the gadget offers as a better source.

The test waits for the hints, checks each citation's verdict level (the good one supported, the
bad one not, or at most partially, supported), clicks "Insert citation" and checks the
textarea. Other tests break the service on purpose (down, blocked by a Content-Security-
Policy) and check the editor keeps working with one calm message. Screenshots are kept in
``artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import mwparserfromhell
import pytest

from gadget.deploy import line_for_wiki

from harness.browser import save_screenshot
from harness.mediawiki import Account
from harness.redis import free_port
from httpserver import LocalServer, Response

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
TITLE = "Alsea (company)"
EDITOR = "Gadgeteer"
GOOD_CLAIM = "Alsea operates Starbucks coffee shops in Mexico, Argentina and Chile."
BAD_CLAIM = "Alsea was founded in Mexico City in 1997."
ALSEA = (b"<html><head><title>Alsea annual report</title></head><body>"
         b"<p>Alsea operates Starbucks coffee shops in Mexico, Argentina and Chile.</p>"
         b"<p>It also operates Domino's Pizza and Burger King restaurants.</p></body></html>")
WEATHER_TEXT = "Tomorrow will be sunny with light winds along the coast. Temperatures reach 25 degrees."
WEATHER = f"<html><head><title>Weather</title></head><body><p>{WEATHER_TEXT}</p></body></html>".encode()
HISTORY_TEXT = ("Alsea was founded in Mexico City in 1997 by the Torrado family. "
                "Today the company runs restaurants in Latin America and Spain.")
#: Waits for the worker (model loaded at start, source fetched, index searched).
HINT_TIMEOUT_MS = 180_000


def article(sources: LocalServer) -> str:
    return (f"'''Alsea''' is a Mexican restaurant operator.\n\n== Business ==\n"
            f"{GOOD_CLAIM}<ref>{{{{cite web |url={sources.url('/alsea')} |title=Alsea annual report}}}}</ref> "
            f"{BAD_CLAIM}<ref>[{sources.url('/weather')} Weather report]</ref>\n\n"
            f"== References ==\n<references />\n")


def serve_sources(server: LocalServer) -> LocalServer:
    """The article's two cited pages and the better source, on ``server`` (also used by
    tests/test_gadget_liftwing_e2e.py and benchmarks/gadget.py)."""
    server.add("/alsea", Response(body=ALSEA))
    server.add("/weather", Response(body=WEATHER))
    server.add("/alsea-history", Response(body=f"<html><body><p>{HISTORY_TEXT}</p></body></html>".encode()))
    return server


def build_index(folder: Path, sources: LocalServer) -> Path:
    """A small evidence index in ``folder``/index: the better source and a distractor."""
    documents = folder / "documents.jsonl"
    rows = [{"url": sources.url("/alsea-history"), "title": "Alsea history", "text": HISTORY_TEXT},
            {"url": sources.url("/weather"), "title": "Weather", "text": WEATHER_TEXT}]
    documents.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    subprocess.run([sys.executable, "-m", "side", "index", "build", "--jsonl", str(documents),
                    "--out", str(folder / "index")], check=True, capture_output=True, timeout=300, cwd=REPO)
    return folder / "index"


@pytest.fixture(scope="module")
def sources():
    with LocalServer() as server:
        yield serve_sources(server)


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory, sources: LocalServer) -> Path:
    """A worker var folder with a small evidence index: the better source and a distractor."""
    folder = tmp_path_factory.mktemp("gadget-var")
    build_index(folder, sources)
    return folder


def stack_env(mediawiki) -> dict[str, str]:
    """What the service needs to answer the gadget on ``mediawiki``: the local sources, CORS for
    the wiki, and the wiki's address."""
    return {"SIDE_FETCH_ALLOW_HOSTS": "127.0.0.1", "SIDE_SERVICE_CORS_ORIGINS": mediawiki.url,
            "SIDE_SERVICE_WIKI_URLS": f"{mediawiki.dbname}={mediawiki.url}"}


@pytest.fixture(scope="module")
def stack(service_stack, mediawiki, var_dir):
    return service_stack(var_dir=var_dir, env=stack_env(mediawiki))


def deploy(mediawiki, *extra: str) -> subprocess.CompletedProcess:
    """The deploy as an interface admin runs it: pywikibot's user-config.py and password file."""
    return subprocess.run([sys.executable, "-m", "gadget.deploy", "--api", mediawiki.api, "--user", "Deployer", *extra],
                          env=mediawiki.pywikibot_env("Deployer"), stdin=subprocess.DEVNULL,
                          check=False, capture_output=True, text=True, timeout=120, cwd=REPO)


def add_deployer(mediawiki) -> None:
    """The interface admin who deploys the gadget (a BotPassword allowed to edit site config)."""
    mediawiki.add_account("Deployer", groups=("interface-admin",), bot_app="side-deploy",
                          grants="basic,highvolume,editpage,createeditmovepage,editsiteconfig")


def add_editor(mediawiki, sources: LocalServer) -> str:
    """The editor who turned the gadget on in their preferences, and the article; returns the
    editor's password."""
    editor_password = "Editor-" + secrets.token_hex(8)
    mediawiki.run_maintenance("createAndPromote.php", EDITOR, editor_password)
    mediawiki.accounts[EDITOR] = Account(EDITOR, editor_password)
    mediawiki.call({"action": "options", "change": "gadget-side=1", "token": mediawiki.token(EDITOR)},
                   EDITOR, post=True)
    mediawiki.edit(TITLE, article(sources), user=EDITOR, summary="article for the gadget test")
    return editor_password


@pytest.fixture(scope="module")
def installed(mediawiki, stack, sources):
    """The gadget deployed (by an interface admin, through pywikibot), an editor who enabled it,
    and the article. Returns the editor's password."""
    add_deployer(mediawiki)
    dry = deploy(mediawiki, "--service-url", stack.web_url, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would create  MediaWiki:Gadget-side.js" in dry.stdout
    assert mediawiki.page_text("MediaWiki:Gadget-side.js") is None, "a dry run wrote a page"
    done = deploy(mediawiki, "--service-url", stack.web_url)
    assert done.returncode == 0, done.stderr
    return {"password": add_editor(mediawiki, sources)}


def grant_consent(mediawiki) -> None:
    """What the consent prompt's "Allow" saves, set through the API for tests about errors."""
    mediawiki.call({"action": "options", "change": "userjs-side-consent=granted",
                    "token": mediawiki.token(EDITOR)}, EDITOR, post=True)


def login(page, mediawiki, password: str) -> None:
    page.goto(f"{mediawiki.index}?title=Special:UserLogin")
    page.fill("#wpName1", EDITOR)
    page.fill("#wpPassword1", password)
    page.click("#wpLoginAttempt")
    page.wait_for_selector("#pt-userpage, #pt-userpage-2", state="attached")


def open_editor(page, mediawiki, skin: str = "vector-2022") -> None:
    page.goto(f"{mediawiki.index}?title={quote(TITLE.replace(' ', '_'))}&action=edit&useskin={skin}")
    assert page.locator(f"body.skin-{skin}").count() == 1
    page.wait_for_selector(".wikiEditor-ui-toolbar")
    page.wait_for_selector(".side-panel")


#: The verdict levels the service answers with (the panel's ``data-side-level``).
LEVELS = ("supported", "partially_supported", "not_supported", "cannot_check")
#: The levels that ask the editor to look again, each with better sources to insert.
NEEDS_REVIEW = ("partially_supported", "not_supported")


def wait_for_verdicts(page, count: int) -> None:
    """Until ``count`` citations are listed, each with a verdict level from the service."""
    page.wait_for_function(
        """([count, levels]) => {
            const hints = [...document.querySelectorAll('.side-hint')];
            return hints.length === count && hints.every(h => levels.includes(h.getAttribute('data-side-level')));
        }""", arg=[count, list(LEVELS)], timeout=HINT_TIMEOUT_MS)


def hint(page, *levels: str):
    return page.locator(", ".join(f'.side-hint[data-side-level="{level}"]' for level in levels))


def test_the_deploy_script_installs_the_gadget_pages(mediawiki, installed, stack):
    definition = mediawiki.page_text("MediaWiki:Gadgets-definition")
    line = (REPO / "gadget" / "gadget-definition.txt").read_text(encoding="utf-8").strip()
    version = mediawiki.call({"action": "query", "meta": "siteinfo"})["query"]["general"]["generator"]
    assert line_for_wiki(line, version) in definition.splitlines()
    config = json.loads(mediawiki.page_text("MediaWiki:Gadget-side-config.json"))
    assert config["apiUrl"] == stack.web_url
    assert mediawiki.page_text("MediaWiki:Gadget-side-refs.js") == (
        REPO / "gadget" / "src" / "side-refs.js").read_text(encoding="utf-8").rstrip("\n")
    gadgets = mediawiki.call({"action": "query", "list": "gadgets", "gaprop": "id|metadata"})["query"]["gadgets"]
    side = next(g for g in gadgets if g["id"] == "side")
    assert side["metadata"]["settings"]["default"] is False
    assert "side-messages.json" in " ".join(side["metadata"]["module"]["datas"])
    again = deploy(mediawiki, "--service-url", stack.web_url)
    assert again.returncode == 0 and "create" not in again.stdout and "update" not in again.stdout


def test_hints_flag_the_bad_citation_and_insert_a_better_source(page, mediawiki, installed, stack, sources):
    login(page, mediawiki, installed["password"])
    open_editor(page, mediawiki)
    panel = page.locator(".side-panel")
    assert "Nothing is sent before you allow it" in panel.inner_text()
    assert stack.web_url in panel.inner_text()
    save_screenshot(page, "gadget-consent", full_page=False)
    page.click(".side-consent-allow")

    wait_for_verdicts(page, 2)
    bad = hint(page, *NEEDS_REVIEW)
    assert bad.count() == 1
    assert BAD_CLAIM in bad.inner_text()
    good = page.locator(".side-hint").first
    assert GOOD_CLAIM in good.inner_text()
    assert good.get_attribute("data-side-level") == "supported"
    assert good.locator(".side-verdict").inner_text() == "Supported"
    level = bad.get_attribute("data-side-level")
    assert bad.locator(".side-verdict").inner_text() == {"not_supported": "Not supported",
                                                        "partially_supported": "Partially supported"}[level]
    assert good.locator(".side-insert").count() == 0
    assert "Source says:" in bad.inner_text()
    suggestion = bad.locator(".side-suggestion").first
    assert suggestion.locator("a").get_attribute("href") == sources.url("/alsea-history")
    dashboard = page.locator(".side-panel__dashboard")
    assert dashboard.get_attribute("href").startswith(f"{stack.web_url}/dashboard/pages/{mediawiki.dbname}/")
    page.locator(".side-panel").scroll_into_view_if_needed()
    save_screenshot(page, "gadget-hints")

    textarea = page.locator("#wpTextbox1")
    before = textarea.input_value()
    bad_ref = f"{BAD_CLAIM}<ref>[{sources.url('/weather')} Weather report]</ref>"
    assert bad_ref in before
    bad.locator(".side-show").click()  # "[2]" selects the citation in the text
    selection = textarea.evaluate("t => t.value.slice(t.selectionStart, t.selectionEnd)")
    assert selection == f"<ref>[{sources.url('/weather')} Weather report]</ref>"
    suggestion.locator(".side-insert").click()
    after = textarea.input_value()
    inserted = after[before.index(bad_ref) + len(bad_ref):]
    assert inserted.startswith(f"<ref>{{{{cite web |url={sources.url('/alsea-history')} |title=Alsea history")
    cite = inserted[: inserted.index("</ref>") + len("</ref>")]
    assert after == before.replace(bad_ref, bad_ref + cite)
    assert suggestion.locator(".side-insert").is_disabled()
    assert suggestion.locator(".side-insert").inner_text() == "Inserted"

    # The new citation is checked too, and only it is sent.
    wait_for_verdicts(page, 3)
    assert page.locator(".side-hint").nth(2).get_attribute("data-side-level") == "supported"
    save_screenshot(page, "gadget-inserted")
    sent = [c for c in stack.store().checks(origin="gadget", wiki=mediawiki.dbname) if c.title == TITLE]
    assert [len(c.claims) for c in reversed(sent)] == [2, 1]  # the second request: the new citation only
    assert sent[0].claims[0].citation.url == sources.url("/alsea-history")
    assert not [m for m in page.side_console if m.startswith("pageerror")], page.side_console


@pytest.fixture
def user_config(mediawiki, installed):
    """Write ``User:<editor>/common.js`` (how a user points the gadget elsewhere); blank it after."""
    page = f"User:{EDITOR}/common.js"

    def write(script: str) -> None:
        mediawiki.edit(page, script, user=EDITOR, summary="gadget test")

    yield write
    mediawiki.edit(page, "// empty", user=EDITOR, summary="gadget test done")


def test_a_service_that_is_down_shows_one_calm_message(page, mediawiki, installed, user_config):
    port = free_port()  # nothing listens there
    user_config(f"window.sideGadgetConfig = {{ apiUrl: 'http://127.0.0.1:{port}' }};")
    grant_consent(mediawiki)
    login(page, mediawiki, installed["password"])
    open_editor(page, mediawiki)
    page.wait_for_selector('.side-panel[data-side-error="unreachable"]', timeout=30_000)
    assert f"http://127.0.0.1:{port}" in page.evaluate("JSON.stringify(window.sideGadgetConfig)")
    assert page.locator(".side-panel .cdx-message").count() == 1
    assert "cannot be reached" in page.locator(".side-panel .cdx-message").inner_text()
    textarea = page.locator("#wpTextbox1")
    textarea.press("Control+End")
    textarea.type(" Typed while the service is down.")
    assert textarea.input_value().endswith(" Typed while the service is down.")
    save_screenshot(page, "gadget-service-down")
    assert not [m for m in page.side_console if m.startswith("pageerror")], page.side_console


def test_a_content_security_policy_block_is_named(page, mediawiki, installed, stack):
    """A wiki whose CSP does not list the service in connect-src: the browser blocks the call."""

    def with_csp(route):
        response = route.fetch()
        headers = {**response.headers, "content-security-policy": "connect-src 'self'"}
        route.fulfill(response=response, headers=headers)

    grant_consent(mediawiki)
    login(page, mediawiki, installed["password"])
    page.route(lambda url: "action=edit" in url, with_csp)
    open_editor(page, mediawiki)
    page.wait_for_selector('.side-panel[data-side-error="csp"]', timeout=30_000)
    message = page.locator(".side-panel .cdx-message").inner_text()
    assert "Content-Security-Policy" in message and stack.web_url in message
    assert page.locator("#wpTextbox1").is_editable()
    save_screenshot(page, "gadget-csp-blocked")


def visual_editor_wikitext(page) -> str:
    """The VisualEditor document as Parsoid serialises it on save (action=visualeditoredit)."""
    return page.evaluate("""() => new Promise((resolve, reject) => {
        const target = ve.init.target;
        target.getWikitextFragment(target.getSurface().getModel().getDocument(), false).then(resolve, reject);
    })""")


def test_visual_editor_lists_verdicts_and_inserts_a_cite_reference(page, mediawiki, installed, stack, sources):
    """VisualEditor's visual mode (Parsoid from core): hints for the reference nodes, and "Insert
    citation" adds a Cite reference node whose body is a {{cite web}} transclusion."""
    grant_consent(mediawiki)
    login(page, mediawiki, installed["password"])
    page.goto(f"{mediawiki.index}?title={quote(TITLE.replace(' ', '_'))}&veaction=edit&useskin=vector-2022")
    page.wait_for_selector(".ve-ce-surface .mw-ref", timeout=60_000)
    assert page.evaluate("ve.init.target.getSurface().getMode()") == "visual"
    page.wait_for_selector(".side-panel")
    wait_for_verdicts(page, 2)
    good, bad = page.locator(".side-hint").first, hint(page, *NEEDS_REVIEW)
    assert GOOD_CLAIM in good.inner_text() and good.get_attribute("data-side-level") == "supported"
    assert bad.count() == 1 and BAD_CLAIM in bad.inner_text()

    bad.locator(".side-show").click()  # "[2]" selects the second reference node
    selected = page.evaluate("""() => {
        const model = ve.init.target.getSurface().getModel(), range = model.getSelection().getRange();
        return [range.getLength(), model.getDocument().data.getData(range.start).type];
    }""")
    assert selected == [2, "mwReference"]  # the whole node, nothing else
    before = visual_editor_wikitext(page)
    bad_ref = f"{BAD_CLAIM}<ref>[{sources.url('/weather')} Weather report]</ref>"
    assert bad_ref in before
    bad.locator(".side-suggestion").first.locator(".side-insert").click()
    wait_for_verdicts(page, 3)  # the new reference is read back from the model and checked
    assert page.locator(".side-hint").nth(2).get_attribute("data-side-level") == "supported"
    page.locator(".side-panel").scroll_into_view_if_needed()
    save_screenshot(page, "gadget-visualeditor")

    after = visual_editor_wikitext(page)
    assert after.count("<ref") == before.count("<ref") + 1
    inserted = after[after.index(bad_ref) + len(bad_ref):]
    cite = inserted[: inserted.index("</ref>") + len("</ref>")]
    parsed = mwparserfromhell.parse(cite)
    [ref] = parsed.filter_tags(matches=lambda tag: tag.tag == "ref")
    [template] = mwparserfromhell.parse(str(ref.contents)).filter_templates()
    assert template.name.strip().lower() == "cite web"
    assert template.get("url").value.strip() == sources.url("/alsea-history")
    assert template.get("title").value.strip() == "Alsea history"
    assert after.replace(cite, "", 1) == before
    assert not [m for m in page.side_console if m.startswith("pageerror")], page.side_console

"""gadget/deploy.py: the pages it builds, the definition merge, and installing them on a real wiki.

The wiki is a local MediaWiki 1.39 of its own (tests/harness/mediawiki.py). The deploy runs as
an operator runs it: a subprocess whose ``PYWIKIBOT_DIR`` holds a ``user-config.py`` and a
``user-password.py`` with a BotPassword made by ``createBotPassword.php`` for an interface
admin, written by the harness as for the bot's tests. What it wrote is read back through the
Action API. An edit conflict is made for real: another account saves a page between the
deploy's read and its write.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gadget import deploy

from harness.mediawiki import MediaWiki, _fail_or_skip, is_installed, start_mediawiki

REPO = Path(__file__).resolve().parents[1]
#: What Special:BotPasswords calls "Edit sitewide and user CSS/JS" and "Edit the MediaWiki namespace ..."
DEPLOY_GRANTS = "basic,highvolume,editpage,createeditmovepage,editsiteconfig"


def test_every_page_of_the_definition_line_is_built():
    line = deploy.definition_line()
    pages = {page.title: page.text for page in deploy.gadget_pages("https://side.example.org/")}
    names = deploy.definition_pages(line)
    assert names[0] == "side.js"  # the package's entry point comes first
    assert [f"MediaWiki:Gadget-{name}" for name in names] == list(pages)[:-2]
    assert "default" not in line.split("]")[0]  # opt-in, never a default gadget
    messages = json.loads(pages["MediaWiki:Gadget-side-messages.json"])
    assert list(messages)[0] == "en" and "de" in messages and "qqq" not in messages  # by language, English first
    assert "@metadata" not in messages["en"] and messages["en"]["side-insert"] == "Insert citation"
    assert messages["de"]["side-insert"] == "Beleg einfügen"
    assert json.loads(pages["MediaWiki:Gadget-side-config.json"])["apiUrl"] == "https://side.example.org"
    assert pages["MediaWiki:Gadget-side"].startswith("Side:")
    assert pages["MediaWiki:Gadget-side/de"].startswith("Side: prüft")  # the description's translation


def test_the_gadget_loads_codex_styles_and_the_full_codex_only_where_there_is_none():
    line = deploy.definition_line()
    options = line.split("]")[0]
    assert "codex-styles" in options.split("dependencies=")[1].split(",") and "@wikimedia/codex" not in line
    for version in ("1.41.0", "MediaWiki 1.45.0-wmf.3", "1.100.1", None, "unknown"):
        assert deploy.line_for_wiki(line, version) == line, version
    old = deploy.line_for_wiki(line, "MediaWiki 1.39.17")
    assert old == line.replace(",codex-styles]", ",@wikimedia/codex]")
    assert deploy.definition_pages(old) == deploy.definition_pages(line)


def test_the_definition_line_is_replaced_or_added_and_nothing_else_changes():
    line = deploy.definition_line()
    other = "* other[ResourceLoader|default]|other.js"
    old = f"== editing-gadgets ==\n{other}\n* side[ResourceLoader]|side.js\n\n== misc ==\n* x|x.js\n"
    assert deploy.merge_definition(old, line) == old.replace("* side[ResourceLoader]|side.js", line)
    without = f"== editing-gadgets ==\n{other}\n"
    assert deploy.merge_definition(without, line) == f"== editing-gadgets ==\n{line}\n{other}\n"
    assert deploy.merge_definition("== misc ==\n* x|x.js\n", line) == (
        f"== misc ==\n* x|x.js\n\n== editing-gadgets ==\n{line}\n")
    assert deploy.merge_definition("", line) == f"== editing-gadgets ==\n{line}\n"
    assert deploy.merge_definition(deploy.merge_definition(old, line), line) == deploy.merge_definition(old, line)


def test_a_dry_run_without_a_wiki_prints_the_pages_and_writes_nothing():
    out = io.StringIO()
    steps = deploy.deploy(None, dry_run=True, out=out)
    assert {step.state for step in steps} == {"write"}
    text = out.getvalue()
    assert "would write  MediaWiki:Gadget-side.js" in text
    assert deploy.definition_line() in text
    with pytest.raises(deploy.DeployError, match="no wiki"):
        deploy.deploy(None)


def run_deploy(env: dict[str, str], *args: str, stdin=subprocess.DEVNULL) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gadget.deploy", *args], env=env, stdin=stdin, capture_output=True,
                          text=True, timeout=180, cwd=REPO, check=False)


def test_a_password_on_the_command_line_is_refused_and_says_where_it_goes(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "PYWIKIBOT_DIR": str(tmp_path)}
    for args in (["--password", "secret"], ["--password"], ["--user", "X", "--password=secret", "--dry-run"]):
        result = run_deploy(env, *args)
        assert result.returncode == 2 and result.stdout == ""
        [line] = result.stderr.splitlines()
        assert line.startswith("python -m gadget.deploy: error: --password is not accepted")
        assert "user-password.py" in line and "password_file" in line and "BotPassword(" in line


@pytest.mark.parametrize("args, message", [
    (["--api", "http://127.0.0.1:9/wiki/Main_Page"], "--api must be the URL of a wiki's api.php"),
    (["--site", "nosuchfamily:xx"], "--site nosuchfamily:xx: Family nosuchfamily does not exist"),
    (["--api", "http://127.0.0.1:9/api.php", "--site", "wikipedia:en"], "not allowed with argument"),
])
def test_a_bad_wiki_argument_is_a_one_line_error(tmp_path, args, message):
    result = run_deploy({"PATH": "/usr/bin:/bin", "PYWIKIBOT_DIR": str(tmp_path)}, *args)
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("python -m gadget.deploy: error: ") and message in line


# -- on a real wiki ----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def wiki(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MediaWiki]:
    """A wiki of its own: the session's wiki must not have the gadget before test_gadget_e2e's dry run."""
    ok, reason = is_installed()
    if not ok:
        _fail_or_skip(reason)
    wiki = start_mediawiki(tmp_path_factory.mktemp("deploy-wiki"))
    wiki.add_account("Deployer", groups=("interface-admin",), bot_app="side-deploy", grants=DEPLOY_GRANTS)
    yield wiki
    wiki.stop()


def wiki_state(wiki: MediaWiki) -> dict[str, tuple[str | None, int | None]]:
    """Text and latest revision id of every gadget page, read through the Action API."""
    titles = [step.page.title for step in deploy.plan(None, None)]
    data = wiki.call({"action": "query", "prop": "revisions", "rvprop": "ids|content", "rvslots": "main",
                      "titles": "|".join(titles)})["query"]["pages"]
    state = {page["title"]: (None, None) if page.get("missing") else
             (page["revisions"][0]["slots"]["main"]["content"], page["revisions"][0]["revid"]) for page in data}
    return {title: state[title] for title in titles}


def test_install_with_a_botpassword_then_a_second_run_changes_nothing(wiki):
    env = wiki.pywikibot_env("Deployer")
    service = "http://127.0.0.1:9/side"
    dry = run_deploy(env, "--service-url", service, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would create  MediaWiki:Gadget-side.js" in dry.stdout
    assert all(text is None for text, _ in wiki_state(wiki).values()), "a dry run wrote a page"

    done = run_deploy(env, "--api", wiki.api, "--user", "Deployer", "--service-url", service)
    assert done.returncode == 0, done.stderr
    state = wiki_state(wiki)
    expected = {page.title: page.text for page in deploy.gadget_pages(service)}
    for title, text in expected.items():
        assert state[title][0] == text.rstrip("\n"), title
    definition = state[deploy.DEFINITION_PAGE][0]
    version = wiki.call({"action": "query", "meta": "siteinfo"})["query"]["general"]["generator"]
    assert deploy.line_for_wiki(deploy.definition_line(), version) in definition.splitlines()
    assert json.loads(state["MediaWiki:Gadget-side-config.json"][0])["apiUrl"] == service
    for title in state:
        assert {r["user"] for r in wiki.revisions(title)} == {"Deployer"}, title
        assert wiki.revisions(title)[-1]["comment"] == deploy.DEFAULT_SUMMARY
    gadgets = wiki.call({"action": "query", "list": "gadgets", "gaprop": "id|metadata"})["query"]["gadgets"]
    side = next(g for g in gadgets if g["id"] == "side")
    assert "side-messages.json" in " ".join(side["metadata"]["module"]["datas"])

    again = run_deploy(env, "--service-url", service)
    assert again.returncode == 0, again.stderr
    assert {line.split()[0] for line in again.stdout.splitlines()} == {"unchanged"}
    assert wiki_state(wiki) == state  # no new revision anywhere


def test_an_account_without_the_rights_writes_nothing(wiki):
    result = run_deploy(wiki.pywikibot_env("TestBot"), "--service-url", "http://127.0.0.1:9/other")
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1].startswith("deploy failed: TestBot on ")
    assert "lacks editinterface, editsitejs" in result.stderr and "interface-admin" in result.stderr
    assert json.loads(wiki_state(wiki)["MediaWiki:Gadget-side-config.json"][0] or "{}").get("apiUrl") != (
        "http://127.0.0.1:9/other")


def test_no_password_for_the_account_fails_without_prompting(wiki):
    result = run_deploy(wiki.pywikibot_env("Deployer"), "--user", "Alice")
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last.startswith("deploy failed: no password for Alice in ") and "BotPassword(" in last


#: Reads the wiki like the deploy, says so, waits for a line on stdin, then writes.
DRIVER = """
import sys
from gadget import deploy
site = deploy.open_wiki(None, None, None, login=True)
steps = deploy.plan(site, sys.argv[1])
print("planned", *[f"{s.page.title}={s.state}" for s in steps], flush=True)
sys.stdin.readline()
try:
    deploy.write(steps, out=sys.stdout)
except deploy.DeployConflict as conflict:
    print("conflicts:", *conflict.titles, flush=True)
    sys.exit(1)
"""


def test_an_edit_conflict_is_reported_and_their_edit_kept(wiki):
    env = wiki.pywikibot_env("Deployer")
    assert run_deploy(env, "--service-url", "http://127.0.0.1:9/a").returncode == 0
    title = "MediaWiki:Gadget-side-config.json"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, "http://127.0.0.1:9/b"], env=env, cwd=REPO, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        planned = driver.stdout.readline().split()
        assert planned[0] == "planned", driver.stderr.read()
        assert f"{title}=update" in planned
        theirs = json.loads(wiki.page_text(title))
        theirs["apiUrl"] = "http://127.0.0.1:9/theirs"
        their_text = json.dumps(theirs, indent="\t")
        wiki.edit(title, their_text, user="Admin", summary="point the gadget elsewhere")
        out, err = driver.communicate("go\n", timeout=120)
    finally:
        driver.kill()
    assert driver.returncode == 1, out + err[-3000:]
    assert f"conflicts: {title}" in out
    conflict = next(line for line in out.splitlines() if line.strip().startswith("conflict "))
    assert f"{title}: saved by Admin at " in conflict and "left as they saved it" in conflict
    assert wiki.page_text(title) == their_text
    assert wiki.revisions(title)[-1]["user"] == "Admin"

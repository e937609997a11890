"""gadget/deploy.py without a wiki: the pages it builds, the definition merge, the dry run.

Writing to a real wiki is tested end to end in test_gadget_e2e.py.
"""

from __future__ import annotations

import io
import json

import pytest

from gadget import deploy


def test_every_page_of_the_definition_line_is_built():
    line = deploy.definition_line()
    pages = {page.title: page.text for page in deploy.gadget_pages("https://side.example.org/")}
    names = deploy.definition_pages(line)
    assert names[0] == "side.js"  # the package's entry point comes first
    assert [f"MediaWiki:Gadget-{name}" for name in names] == list(pages)[:-1]
    assert "default" not in line.split("]")[0]  # opt-in, never a default gadget
    messages = json.loads(pages["MediaWiki:Gadget-side-messages.json"])
    assert "@metadata" not in messages and messages["side-insert"] == "Insert citation"
    assert json.loads(pages["MediaWiki:Gadget-side-config.json"])["apiUrl"] == "https://side.example.org"
    assert pages["MediaWiki:Gadget-side"].startswith("Side:")


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
    steps = deploy.deploy(None, None, None, dry_run=True, out=out)
    assert {state for _, state in steps} == {"write"}
    text = out.getvalue()
    assert "would write  MediaWiki:Gadget-side.js" in text
    assert deploy.definition_line() in text


def test_a_real_run_needs_credentials():
    with pytest.raises(deploy.DeployError, match="--api, --user and --password"):
        deploy.deploy("http://127.0.0.1:9/api.php", None, None)
    assert deploy.main(["--api", "http://127.0.0.1:9/api.php"]) == 1

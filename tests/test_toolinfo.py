"""deploy/toolforge/toolinfo.json against Toolhub's toolinfo schema 1.2.2.

The schema used here, ``tests/fixtures/toolinfo-1.2.2.schema.json``, is this project's own
wording of the rules of Toolhub's ``jsonschema/toolinfo/1.2.2.json`` (the Wikimedia Toolhub
source, github.com/wikimedia/wikimedia-toolhub) and of the Toolhub model that stores records:
required fields, length limits, ``tool_type`` values, wiki host names, language codes, the
person and url_multilingual shapes. Where it is stricter than upstream (``$schema`` required,
names in stored slug form, http(s) URLs, no unknown fields) its descriptions say so. The
upstream file is not copied into the repository.
"""

from __future__ import annotations

import copy
import json

import pytest
from jsonschema import Draft7Validator, FormatChecker

from side.config import REPO_ROOT, BotConfig

TOOLINFO = REPO_ROOT / "deploy" / "toolforge" / "toolinfo.json"
SCHEMA = json.loads((REPO_ROOT / "tests" / "fixtures" / "toolinfo-1.2.2.schema.json").read_text())
VALIDATOR = Draft7Validator(SCHEMA, format_checker=FormatChecker())
#: Side's single record as it was written for toolinfo 1.1 (Hay's directory).
OLD_STYLE = {
    "name": "side", "title": "Side: citation verification", "description": "Finds weak citations.",
    "url": "https://side.toolforge.org/", "keywords": "citations, verifiability",
    "author": [{"name": "Side maintainers"}], "repository": "https://github.com/side/side", "license": "MIT",
    "technology_used": ["Python", "Flask"], "tool_type": "web app", "for_wikis": ["enwiki"],
    "available_ui_languages": ["en"], "api_url": "https://side.toolforge.org/api/v1",
    "bot_username": "SideBot",
    "toolinfo_version": "1.2.0",
}


def errors(document) -> list[str]:
    """Every violation, as 'path: message' (empty when the document is valid)."""
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in sorted(VALIDATOR.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))]


def violated(document) -> set[str]:
    """The record fields (or 'required'/'additional') that fail, looking inside oneOf branches."""
    found = set()
    for error in VALIDATOR.iter_errors(document):
        for leaf in (error.context or [error]) if error.validator == "oneOf" else [error]:
            path = [p for p in leaf.absolute_path if not isinstance(p, int)]
            found.add(path[0] if path else leaf.validator)
    return found


@pytest.fixture(scope="module")
def records() -> list[dict]:
    return json.loads(TOOLINFO.read_text())


def test_the_fixture_is_a_valid_draft_7_schema():
    Draft7Validator.check_schema(SCHEMA)


def test_toolinfo_json_is_valid_toolinfo_1_2_2(records):
    assert errors(records) == []


def test_one_record_per_tool_with_unique_prefixed_names(records):
    assert isinstance(records, list)
    assert sorted(r["tool_type"] for r in records) == ["bot", "gadget", "web app"]
    names = [r["name"] for r in records]
    assert len(set(names)) == len(names)
    assert all(name.startswith("toolforge-side-") for name in names)
    assert all(r["$schema"] == "/toolinfo/1.2.2" and "toolinfo_version" not in r for r in records)


def test_the_bot_record_names_the_account_whose_run_page_the_bot_reads(records):
    (bot,) = [r for r in records if r["tool_type"] == "bot"]
    assert f"User:{bot['bot_username']}/" in BotConfig().run_page + "/"


def test_the_old_style_record_is_rejected():
    assert {"for_wikis", "required", "additionalProperties"} <= violated(OLD_STYLE)
    assert errors(OLD_STYLE)  # and Toolhub would have dropped toolinfo_version without a word


def mutated(records: list[dict], index: int, **changes) -> list[dict]:
    document = copy.deepcopy(records)
    for key, value in changes.items():
        if value is None:
            del document[index][key]
        else:
            document[index][key] = value
    return document


@pytest.mark.parametrize(("changes", "field"), [
    ({"for_wikis": ["enwiki"]}, "for_wikis"),
    ({"for_wikis": "en.wikipedia.com"}, "for_wikis"),
    ({"tool_type": "webapp"}, "tool_type"),
    ({"url": "side.toolforge.org"}, "url"),
    ({"repository": "git@github.com:side/side.git"}, "repository"),
    ({"name": "Side Web"}, "name"),
    ({"name": "toolforge-side-" + "x" * (256 - len("toolforge-side-"))}, "name"),  # over 255
    ({"$schema": "/toolinfo/1.2.0"}, "$schema"),
    ({"author": [{"name": "Side maintainers", "homepage": "https://side.toolforge.org/"}]}, "author"),
    ({"available_ui_languages": ["english"]}, "available_ui_languages"),
    ({"bot_username": "User:SideBot"}, "bot_username"),
    ({"license": "MIT License"}, "license"),
    ({"title": None}, "required"),
    ({"toolinfo_version": "1.2.2"}, "additionalProperties"),
], ids=lambda v: v if isinstance(v, str) else next(iter(v)))
def test_each_rule_rejects_what_it_should(records, changes, field):
    assert field in violated(mutated(records, 0, **changes))

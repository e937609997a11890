"""Real headless Chromium for the gadget and dashboard tests (Playwright, Debian's chromium).

Playwright drives the system browser (``/usr/bin/chromium``, installed by
``scripts/install.sh``); nothing is downloaded. Fixtures:

* ``browser`` (session): one Chromium process for the whole run;
* ``page`` (function): a fresh context (own cookies and storage) and page, 1280x900, whose
  screenshot is saved to ``artifacts/screenshots/<test name>.png`` when the test ends, pass or
  fail; ``save_screenshot(page, name)`` keeps more along the way.

Browser console errors and failed requests are collected on ``page.side_console`` (a list of
strings) so a test can assert a page ran cleanly. Outside CI the fixtures skip when Chromium
or Playwright is missing; in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: The browser binary; SIDE_CHROMIUM overrides it.
CHROMIUM = os.environ.get("SIDE_CHROMIUM", "/usr/bin/chromium")
#: Flags for a quiet, offline, sandbox-free headless run (tests run as root in CI).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-default-apps", "--disable-dev-shm-usage"]
SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "artifacts" / "screenshots"
VIEWPORT = {"width": 1280, "height": 900}


def _fail_or_skip(reason: str) -> None:
    if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
        pytest.fail(f"{reason}; CI must run the browser tests")
    pytest.skip(reason)


def save_screenshot(page: Any, name: str, full_page: bool = True) -> Path:
    """Save a PNG of the page under artifacts/screenshots/ and return its path."""
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name).strip('_')}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """Headless Chromium (Playwright's ``Browser``) shared by the whole test session."""
    if not (Path(CHROMIUM).is_file() or shutil.which(CHROMIUM)):
        _fail_or_skip(f"Chromium not found at {CHROMIUM} (run scripts/install.sh)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _fail_or_skip("playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A page in a fresh browser context; its final screenshot is kept as an artifact."""
    context = browser.new_context(viewport=VIEWPORT, locale="en-US")
    context.set_default_timeout(30_000)
    tab = context.new_page()
    messages: list[str] = []
    tab.on("console", lambda m: messages.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    tab.on("pageerror", lambda e: messages.append(f"pageerror: {e}"))
    tab.on("requestfailed", lambda r: messages.append(f"requestfailed: {r.method} {r.url} {r.failure}"))
    tab.side_console = messages
    try:
        yield tab
    finally:
        try:
            save_screenshot(tab, request.node.name)
        except Exception as error:  # noqa: BLE001 - a closed page must not hide the test's own result
            print(f"no screenshot for {request.node.name}: {error}")
        context.close()

"""Take the README's pictures: the patrol dashboard and the editor gadget, in real headless Chromium.

Nothing is staged by hand. The pictures come from two integration tests, which start the real
parts on 127.0.0.1 and save screenshots under ``artifacts/screenshots/`` (``tests/harness/``):

* ``tests/test_dashboard_browser.py``: Redis, a ``side-worker`` with the shipped verifier and a
  small evidence index, and the web service. A snippet that cites an unrelated page is checked;
  the dashboard shows the stored Result with its evidence and a better source.
* ``tests/test_gadget_e2e.py``: Debian's MediaWiki with the gadget installed by
  ``python -m gadget.deploy``; an editor opens an article with a good and a bad citation, and
  the gadget shows a verdict beside each and a better source for the bad one.

This script runs those two tests and writes small copies of the chosen screenshots to
``docs/images/`` (8-bit palette PNGs, at most ``MAX_BYTES`` each)::

    SIDE_DATA_DIR=../shared/data .venv/bin/python scripts/screenshots.py

It needs what ``scripts/test.sh`` installs (Redis, MediaWiki, Chromium, Playwright) and takes a
few minutes on 2 CPU cores, most of it the worker loading the model and the wiki starting.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
SHOTS = REPO / "artifacts" / "screenshots"
IMAGES = REPO / "docs" / "images"
#: The tests that take the pictures, and which of their screenshots the README shows.
TESTS = [
    "tests/test_dashboard_browser.py::test_a_flagged_citation_is_dismissed_with_a_reason",
    "tests/test_gadget_e2e.py::test_hints_flag_the_bad_citation_and_insert_a_better_source",
]
PICTURES = {"dashboard_2_detail.png": "dashboard.png", "gadget-hints.png": "gadget.png"}
#: Largest picture kept in the repository.
MAX_BYTES = 300_000
#: Widest picture kept (the browser's viewport is 1280 pixels).
MAX_WIDTH = 1280
#: Tallest picture kept: a full-page screenshot is cut to its top.
MAX_HEIGHT = 1100


def run_tests() -> int:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "", *TESTS]
    return subprocess.run(command, cwd=REPO, env=env, check=False).returncode


def shrink(source: Path, target: Path, colours: int = 128) -> int:
    """Write ``source`` cut to MAX_HEIGHT as a palette PNG, fewer colours until it fits MAX_BYTES."""
    image = Image.open(source).convert("RGB")
    image = image.crop((0, 0, min(image.width, MAX_WIDTH), min(image.height, MAX_HEIGHT)))
    while True:
        image.quantize(colors=colours, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
        size = target.stat().st_size
        if size <= MAX_BYTES or colours <= 16:
            return size
        colours //= 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-tests", action="store_true",
                        help="only shrink the screenshots the last test run left in artifacts/screenshots/")
    args = parser.parse_args(argv)
    if not args.no_tests and (code := run_tests()) != 0:
        print(f"the screenshot tests failed (exit {code}); docs/images/ left as it was", file=sys.stderr)
        return 1
    IMAGES.mkdir(parents=True, exist_ok=True)
    for shot, name in PICTURES.items():
        if not (SHOTS / shot).is_file():
            print(f"missing {SHOTS / shot}; run without --no-tests", file=sys.stderr)
            return 1
        size = shrink(SHOTS / shot, IMAGES / name)
        print(f"wrote {IMAGES / name} ({size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

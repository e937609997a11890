#!/usr/bin/env bash
# One command on a fresh machine: install Side, build the demo evidence index, and check the
# citations of real Wikipedia articles, printing the reports.
#
# With no argument it checks two articles. First a real article from the shared fixtures: with
# no internet its cited pages cannot be fetched, and the report says so, citation by citation.
# Then an article rebuilt from one title's real WiCE claims, whose cited pages the demo index
# holds: that report shows the verification engine at work (verdicts, evidence, suggestions).
# With a wikitext file as argument it checks that file only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
DATA="${SIDE_DATA_DIR:-../shared/data}"
export HF_HUB_OFFLINE=1 SIDE_DATA_DIR="$DATA"
.venv/bin/side index build --demo
if [ "$#" -gt 0 ]; then
  .venv/bin/side verify "$1"
  exit 0
fi
.venv/bin/side verify "$DATA/fixtures/wikitext/Alsea-(company).txt"
.venv/bin/side index demo-article --out var/demo/Starbucks.wikitext
.venv/bin/side verify var/demo/Starbucks.wikitext

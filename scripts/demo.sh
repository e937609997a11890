#!/usr/bin/env bash
# One command on a fresh machine: install Side, build the demo evidence index, and check the
# citations of a real Wikipedia article from the shared fixtures, printing the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
DATA="${SIDE_DATA_DIR:-../shared/data}"
ARTICLE="${1:-$DATA/fixtures/wikitext/Alsea-(company).txt}"
export HF_HUB_OFFLINE=1 SIDE_DATA_DIR="$DATA"
.venv/bin/side index build --demo
.venv/bin/side check "$ARTICLE"

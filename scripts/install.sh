#!/usr/bin/env bash
# Install Side into .venv (idempotent): Debian packages the project needs, then the Python
# package with its test extras. torch==2.13.0 is the CPU build pip finds on local disk.
set -euo pipefail
cd "$(dirname "$0")/.."

# Debian packages: none are needed by the core library yet; the service, bot and gadget add
# theirs here (redis-server, mediawiki, php-sqlite3, chromium).
DEBIAN_PACKAGES=()

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq "${missing[@]}"
fi

PYTHON=""
for candidate in python3.11 python3; do
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    PYTHON="$candidate"; break
  fi
done
[ -n "$PYTHON" ] || { echo "Side needs Python 3.11 (apt-get install python3.11 python3.11-venv)" >&2; exit 1; }

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
stamp=".venv/.side-installed"
want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[dev]'
  echo "$want" > "$stamp"
fi
echo "Side installed in .venv ($(.venv/bin/side --help >/dev/null && echo ok))"

#!/usr/bin/env bash
# Create or update the tool's venv inside the python3.11 image (so its wheels match the
# image's Python). Run it as a one-off job from the tool account:
#   toolforge jobs run bootstrap --image python3.11 --wait 1800 \
#       --command "$HOME/side/deploy/toolforge/bootstrap.sh"
set -euo pipefail
VENV="$HOME/www/python/venv"
SRC="$HOME/side"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --upgrade pip wheel
# CPU wheels of torch: Toolforge has no GPU, and the CUDA wheels would not fit the quota.
# The service extra runs side-worker and the web service; the bot extra, side-bot.
"$VENV/bin/pip" install --extra-index-url https://download.pytorch.org/whl/cpu -e "$SRC[service,bot]"
mkdir -p "$HOME/www/python/src" "$HOME/logs"
ln -sf "$SRC/deploy/toolforge/app.py" "$HOME/www/python/src/app.py"
ln -sf "$SRC/deploy/toolforge/service.template" "$HOME/service.template"
echo "venv ready: $VENV"

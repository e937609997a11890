#!/usr/bin/env bash
# The whole test suite, exactly as CI runs it (.ci/run calls this script).
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh || exit 1
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export SIDE_DATA_DIR="${SIDE_DATA_DIR:-$(cd .. && pwd)/shared/data}"
mkdir -p artifacts
# Two processes, each taking whole test files (a file's module-scoped stack, wiki or browser is
# started once, and every harness uses its own ports, Redis, databases and folders): many tests
# wait on servers and subprocesses, so two processes share the cores well (about a quarter less
# wall time on a 2-core CPU). `bash scripts/test.sh -n 0` runs everything in one process.
.venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist loadfile --junitxml=artifacts/junit.xml "$@"
code=$?
# pytest's "no tests collected" must not pass silently.
[ "$code" -eq 5 ] && { echo "no tests were collected" >&2; exit 1; }
exit "$code"

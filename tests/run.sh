#!/usr/bin/env bash
# Installs everything the tests need on a fresh machine, then runs them.
# Python packages go into .venv; the Kafka broker jars come from Maven Central; Prometheus,
# promtool and Chromium come from Debian's packages; the local LLM server builds into .venv-llm.
# Set RAGPULSE_SKIP_INSTALL=1 to only run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "${RAGPULSE_SKIP_INSTALL:-0}" != 1 ]; then
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
fi

exec .venv/bin/python -m pytest -q "$@"

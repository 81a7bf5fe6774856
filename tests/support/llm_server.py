"""A real OpenAI-compatible LLM server on 127.0.0.1 for tests and benchmarks: llama-cpp-python's
server from the venv that deploy/llm/install.sh builds, serving the GGUF model it assembles."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ports import free_port
from server_process import die_with_parent

ROOT = Path(__file__).resolve().parents[2]
MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
# Keep in step with deploy/llm/install.sh.
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_ALIAS = "qwen2.5-coder-1.5b-instruct"


def llm_venv() -> Path:
    return Path(os.environ.get("RAGPULSE_LLM_VENV", ROOT / ".venv-llm"))


def model_path() -> Path:
    return llm_venv() / "models" / MODEL_FILE


def available() -> bool:
    return (llm_venv() / "bin" / "python").exists() and model_path().exists()


def check_model(path: Path) -> None:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(8 << 20):
            digest.update(chunk)
    if digest.hexdigest() != MODEL_SHA256:
        raise RuntimeError(f"{path}: sha256 {digest.hexdigest()} is not the pinned {MODEL_SHA256}")


@contextmanager
def llama_server(n_ctx: int = 4096, threads: int = 2, log_path: Path | None = None) -> Iterator[str]:
    """Start the server, wait until it answers, yield its base URL (…/v1), stop it."""
    path = model_path()
    check_model(path)
    port = free_port()
    cmd = [
        str(llm_venv() / "bin" / "python"), "-m", "llama_cpp.server",
        "--model", str(path), "--model_alias", MODEL_ALIAS,
        "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads),
        "--verbose", "false",
    ]  # fmt: skip
    log = open(log_path or os.devnull, "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, preexec_fn=die_with_parent)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"llama_cpp.server exited with {proc.returncode}; see {log_path}")
            try:
                with urllib.request.urlopen(base_url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("llama_cpp.server did not start within 180 s") from None
                time.sleep(0.5)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@contextmanager
def openai_judge(log_dir: Path) -> Iterator[Any]:
    """The openai judge on the real model: the server RAGPULSE_LLM_BASE_URL names (…/v1 of one
    already running), or one started here with its log in `log_dir`. Answer relevancy embeds with
    the local judge, as with a chat-only endpoint."""
    from ragpulse.scorer.judge.local import LexicalJudge
    from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
    from ragpulse.scorer.judge.openai.judge import OpenAIJudge

    def judge(base_url: str) -> OpenAIJudge:
        config = OpenAIJudgeConfig(model=MODEL_ALIAS, base_url=base_url, api_key="unused", timeout_s=600,
                                   max_retries=1)
        return OpenAIJudge(config, fallback_embedder=LexicalJudge())

    running = os.environ.get("RAGPULSE_LLM_BASE_URL")
    if running:
        yield judge(running)
        return
    with llama_server(n_ctx=4096, log_path=log_dir / "server.log") as base_url:
        yield judge(base_url)

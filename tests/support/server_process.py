"""Starting and stopping the real servers the tests run (Prometheus, Alertmanager, Jaeger): wait
until a server answers, fail with the end of its log if it exits or never does, stop it."""

from __future__ import annotations

import ctypes
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path


def http_ok(url: str) -> bool:
    with urllib.request.urlopen(url, timeout=1) as r:
        return r.status == 200


def wait_ready(proc: subprocess.Popen, name: str, ready: Callable[[], bool], log_path: Path,
               timeout_s: float) -> None:
    """Poll `ready` (an OSError counts as not yet) until it is true; RuntimeError with the log's
    end if the process exits or the time runs out."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited: {log_path.read_text(errors='replace')[-3000:]}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{name} not ready: {log_path.read_text(errors='replace')[-3000:]}")


def stop_process(proc: subprocess.Popen | None) -> None:
    """Terminate, then kill if it has not gone within 10 s."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def die_with_parent() -> None:
    """A Popen preexec_fn: the server gets SIGTERM when the test or benchmark process dies, even by
    a signal that skips its finally blocks (a killed benchmark left llama.cpp's server running).
    Linux ties the signal to the thread that started the server: start servers from a thread that
    outlives them (the main thread, as fixtures do)."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)

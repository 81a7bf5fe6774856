"""`ragpulse collector` on several cores: receiver.workers collector processes on the same OTLP
ports, and the parent that keeps them running.

Each worker is the whole collector (`ragpulse collector --worker I`): receivers, pipeline, its own
Kafka producer. The kernel spreads the connections among the workers' listening sockets
(SO_REUSEPORT), so a connection, and every span sent over it, belongs to one worker. A port 0 in
the config is resolved here first, so that all workers listen on the same port: the parent binds
it (SO_REUSEPORT, never listening, so it takes no connection) and holds it while it runs.

The parent takes no spans. It starts the workers, forwards their start-up lines, restarts one that
exits (after 0.5 s, doubling with each crash in a row, at most 30 s), and gives up, stopping the
others and exiting non-zero, when one crashes `max_crashes` times within `window_s`. SIGTERM or
SIGINT reaches every worker, which publishes what it accepted and exits; the parent exits 0 when
all of them did so cleanly.

/metrics is not merged: worker I serves its own on prometheus.endpoint's port + I (docs/kafka.md, "More
cores"). A worker whose parent dies stops itself.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.core.endpoints import format_endpoint, parse_endpoint
from ragpulse.core.settings import ConfigError

log = logging.getLogger(__name__)
READY_MARK = "ready in"


@dataclass(frozen=True)
class RestartPolicy:
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    # This many exits of one worker within window_s stop the whole collector.
    max_crashes: int = 5
    window_s: float = 60.0

    def delay(self, crashes: int) -> float:
        return min(self.max_backoff_s, self.backoff_s * 2 ** max(0, crashes - 1))


def metrics_endpoint(endpoint: str, index: int) -> str:
    """Worker `index`'s /metrics address: the configured port + index (port 0 stays 0)."""
    host, port = parse_endpoint(endpoint, "prometheus.endpoint")
    return format_endpoint(host, port + index if port else 0)


def check_metrics_ports(endpoint: str, workers: int) -> None:
    _, port = parse_endpoint(endpoint, "prometheus.endpoint")
    if port and port + workers - 1 > 65535:
        raise ConfigError(f"prometheus.endpoint port {port} + receiver.workers {workers} - 1 is above 65535: "
                          f"worker I serves /metrics on the port + I")


class ReservedPorts:
    """The receivers' ports with 0 replaced by a port the system chose, held until close(), and the
    RAGPULSE_* overrides that give the workers the concrete endpoints."""

    def __init__(self, receiver: ReceiverConfig) -> None:
        self.env: dict[str, str] = {}
        self.endpoints: dict[str, str] = {}
        self._held: list[socket.socket] = []
        for protocol, enabled, endpoint in (("grpc", receiver.enable_grpc, receiver.grpc_endpoint),
                                            ("http", receiver.enable_http, receiver.http_endpoint)):
            if not enabled:
                continue
            host, port = parse_endpoint(endpoint, f"receiver.{protocol}_endpoint")
            if port == 0:
                port = self._hold(host)
                self.env[f"RAGPULSE_RECEIVER__{protocol.upper()}_ENDPOINT"] = format_endpoint(host, port)
            self.endpoints[protocol] = format_endpoint(host, port)

    def _hold(self, host: str) -> int:
        family, kind, proto, _, address = socket.getaddrinfo(host, 0, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind(address)
        self._held.append(sock)
        return int(sock.getsockname()[1])

    def close(self) -> None:
        for sock in self._held:
            sock.close()


class _Worker:
    def __init__(self, index: int) -> None:
        self.index = index
        self.proc: subprocess.Popen[str] | None = None
        self.ready = threading.Event()
        self.crashes: deque[float] = deque()
        self.restart_at: float | None = None


class Supervisor:
    """Runs `command(index)` for each worker index with `env` added, until stop is set."""

    def __init__(self, command: Callable[[int], list[str]], workers: int, env: dict[str, str],
                 policy: RestartPolicy = RestartPolicy(), out: IO[str] = sys.stdout) -> None:
        self._command = command
        self._env = {**os.environ, **env}
        self._policy = policy
        self._out = out
        self._out_lock = threading.Lock()
        self._workers = [_Worker(i) for i in range(workers)]
        self.failed = ""

    def start(self) -> None:
        for worker in self._workers:
            self._spawn(worker)

    def wait_ready(self, stop: threading.Event) -> bool:
        """True once every worker printed its start-up line; False if asked to stop or given up first."""
        while not all(w.ready.is_set() for w in self._workers):
            if stop.wait(0.1) or not self.check():
                return False
        return True

    def pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers if w.proc is not None]

    def check(self, now: float | None = None) -> bool:
        """Restart workers that exited (after their backoff); False once one keeps crashing."""
        now = time.monotonic() if now is None else now
        for worker in self._workers:
            if worker.proc is not None and (code := worker.proc.poll()) is not None:
                worker.proc = None
                while worker.crashes and worker.crashes[0] < now - self._policy.window_s:
                    worker.crashes.popleft()
                worker.crashes.append(now)
                if len(worker.crashes) >= self._policy.max_crashes:
                    self.failed = (f"worker {worker.index} exited {len(worker.crashes)} times within "
                                   f"{self._policy.window_s:g} s (last exit status {code}); stopping")
                    log.error("%s", self.failed)
                    return False
                delay = self._policy.delay(len(worker.crashes))
                log.error("worker %d (exit status %s) restarts in %.1f s", worker.index, code, delay)
                worker.restart_at = now + delay
            if worker.proc is None and worker.restart_at is not None and now >= worker.restart_at:
                worker.restart_at = None
                self._spawn(worker)
        return True

    def stop(self, timeout_s: float = 60.0) -> bool:
        """SIGTERM to every worker, then wait; one still running at the deadline is killed. True when
        every worker running exited 0."""
        running = [w.proc for w in self._workers if w.proc is not None]
        for proc in running:
            proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        clean = True
        for proc in running:
            try:
                clean = proc.wait(max(0.0, deadline - time.monotonic())) == 0 and clean
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                clean = False
        return clean

    def _spawn(self, worker: _Worker) -> None:
        worker.ready.clear()
        proc = subprocess.Popen(self._command(worker.index), env=self._env, stdout=subprocess.PIPE, text=True)
        worker.proc = proc
        log.info("worker %d started (pid %d)", worker.index, proc.pid)
        threading.Thread(target=self._forward, args=(worker, proc), name=f"worker-{worker.index}-out",
                         daemon=True).start()

    def _forward(self, worker: _Worker, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._out_lock:
                self._out.write(f"worker {worker.index} (pid {proc.pid}): {line}")
                self._out.flush()
            if READY_MARK in line:
                worker.ready.set()


def exit_with_parent(poll_s: float = 1.0) -> None:
    """In a worker: SIGTERM to itself (a clean stop) once its parent is gone, so a killed parent
    leaves no workers holding the ports."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()

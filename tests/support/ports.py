"""Free loopback ports for servers the tests cannot start on port 0 (the Kafka broker and
Prometheus take their ports from their configuration)."""

from __future__ import annotations

import random
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ragpulse.config import Config


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A port that is free now, chosen below the ephemeral range.

    A port from bind(0) is in the ephemeral range, where every outgoing connection (Kafka
    clients open many) also takes its local port: between this call and the server's bind one of
    them can take it. Below the range only another explicit bind can.
    """
    low = _ephemeral_low()
    candidates = list(range(max(1024, low - 12000), low))
    random.shuffle(candidates)
    for port in candidates:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port below the ephemeral range")


def loopback_receivers(config: Config) -> Config:
    """The config with both OTLP receivers on port 0: a test that builds the collector must not
    take 4317/4318, which another test (or a real collector on a developer's machine) may hold."""
    config.receiver.grpc_endpoint = "127.0.0.1:0"
    config.receiver.http_endpoint = "127.0.0.1:0"
    return config

"""Settings of the OTLP receivers (gRPC and HTTP). Section `receiver`."""

from __future__ import annotations

from dataclasses import dataclass

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.settings import key, require_at_least


@dataclass
class ReceiverConfig:
    grpc_endpoint: str = "127.0.0.1:4317"
    http_endpoint: str = "127.0.0.1:4318"
    # A request body above this is refused with 413 before it is decoded.
    max_request_bytes: int = 16 * 1024 * 1024
    enable_grpc: bool = True
    enable_http: bool = True

    def validate(self, where: str) -> None:
        parse_endpoint(self.grpc_endpoint, key(where, "grpc_endpoint"))
        parse_endpoint(self.http_endpoint, key(where, "http_endpoint"))
        require_at_least(key(where, "max_request_bytes"), self.max_request_bytes, 1024)

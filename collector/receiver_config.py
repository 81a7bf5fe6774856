"""Settings of the OTLP receivers (gRPC and HTTP). Section `receiver`.

Every limit answers a hostile or broken client with a clear refusal instead of memory, threads or
a hung connection; the refusals are counted in ragpulse_otlp_requests_refused_total{reason}.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpulse.core.endpoints import parse_endpoint
from ragpulse.core.http_guard import AuthConfig, RequestGuard, validate_allowed_hosts
from ragpulse.core.http_server import ConnectionLimits
from ragpulse.core.settings import key, require, require_at_least
from ragpulse.core.tls import TlsConfig

# JSON nesting beyond this is refused before decoding. Python's decoders recurse once per level
# (the recursion limit is 1000) and protobuf's JSON parser stops at 100 message levels (about 150
# JSON levels), so more could never be a valid request.
MAX_JSON_DEPTH_CEILING = 256
# Collector processes beyond the cores only add contention; 64 covers any single host.
MAX_WORKERS = 64


@dataclass
class ReceiverConfig:
    # OTLP gRPC listen address (port 0: the system picks one, the start-up line prints it).
    grpc_endpoint: str = "127.0.0.1:4317"
    # OTLP HTTP listen address (POST /v1/traces, protobuf or JSON, gzip allowed).
    http_endpoint: str = "127.0.0.1:4318"
    # A request body above this is refused with 413 (gRPC: RESOURCE_EXHAUSTED) before it is
    # decoded, whatever its framing, and after decompression too.
    max_request_bytes: int = 16 * 1024 * 1024
    # Nesting of a JSON body ({ and [); OTLP's own structure takes about 10 levels, each nested
    # attribute value (kvlistValue / arrayValue) 4 more. Deeper bodies get 400.
    max_json_depth: int = 64
    # HTTP: connections open at once, one thread each; beyond, a new connection gets 503 and is
    # closed. gRPC: calls in progress (grpc's maximum_concurrent_rpcs; beyond, RESOURCE_EXHAUSTED).
    max_connections: int = ConnectionLimits.max_connections
    # HTTP: a request's line, headers and body must arrive within this many seconds of its first
    # byte (a slow or short body gets 408 and the connection is closed).
    read_timeout_s: float = ConnectionLimits.read_timeout_s
    # A connection with no request for this long is closed (HTTP keep-alive; gRPC idle channel).
    idle_timeout_s: float = ConnectionLimits.idle_timeout_s
    # Set false to turn the gRPC receiver off.
    enable_grpc: bool = True
    enable_http: bool = True  # likewise for HTTP
    # HTTP: names the Host header may carry (no port); empty: localhost and the endpoint's host if it
    # is a name. An IP address is always accepted (DNS rebinding cannot forge one); other names get
    # 421. "*" accepts any. gRPC is not checked: browsers cannot send it.
    allowed_hosts: list[str] = field(default_factory=list)
    # Bearer tokens both receivers require (the exporters' `authorization` header); a request
    # without one gets 401 / UNAUTHENTICATED.
    auth: AuthConfig = field(default_factory=AuthConfig)
    # TLS (and mutual TLS with client_ca_file) on both receivers.
    tls: TlsConfig = field(default_factory=TlsConfig)
    # `ragpulse collector` only (Kafka bus): this many collector processes share the gRPC and HTTP
    # ports (SO_REUSEPORT, the kernel spreads connections), under one parent that restarts a crashed
    # one; each serves its own /metrics on prometheus.endpoint's port + its index (docs/kafka.md,
    # "More cores"). `ragpulse up` is one process: more than 1 is refused there.
    workers: int = 1

    def validate(self, where: str) -> None:
        parse_endpoint(self.grpc_endpoint, key(where, "grpc_endpoint"))
        parse_endpoint(self.http_endpoint, key(where, "http_endpoint"))
        require_at_least(key(where, "max_request_bytes"), self.max_request_bytes, 1024)
        depth = key(where, "max_json_depth")
        require(16 <= self.max_json_depth <= MAX_JSON_DEPTH_CEILING, depth,
                f"between 16 and {MAX_JSON_DEPTH_CEILING}", self.max_json_depth)
        require_at_least(key(where, "max_connections"), self.max_connections, 1)
        require_at_least(key(where, "read_timeout_s"), self.read_timeout_s, 0.1)
        require_at_least(key(where, "idle_timeout_s"), self.idle_timeout_s, 0.1)
        # gRPC holds these in C ints, the idle timeout in milliseconds.
        require(self.max_request_bytes < 2**31, key(where, "max_request_bytes"), "below 2 GiB", self.max_request_bytes)
        require(self.idle_timeout_s * 1000 < 2**31, key(where, "idle_timeout_s"), "below 2147483", self.idle_timeout_s)
        validate_allowed_hosts(key(where, "allowed_hosts"), self.allowed_hosts)
        require(1 <= self.workers <= MAX_WORKERS, key(where, "workers"), f"between 1 and {MAX_WORKERS}", self.workers)

    def connection_limits(self) -> ConnectionLimits:
        return ConnectionLimits(self.max_connections, self.read_timeout_s, self.idle_timeout_s)

    def guard(self, bound_host: str) -> RequestGuard:
        return RequestGuard(self.auth, self.allowed_hosts, bound_host)

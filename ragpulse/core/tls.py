"""TLS for ragpulse's servers (the OTLP receivers, /metrics and the live page), after the
OpenTelemetry Collector's `configtls` server settings: a certificate and key turn TLS on, a client CA
makes it mutual (a client without a certificate signed by it is refused in the handshake). With
`reload_interval_s` renewed files (cert-manager's) are picked up without a restart (Reloading)."""

from __future__ import annotations

import logging
import math
import os
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from ragpulse.core.settings import ConfigError, key, require

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class TlsConfig:
    # PEM certificate (chain) the server presents; with key_file, turns TLS on. Empty: plain text.
    cert_file: str = ""
    # PEM private key of cert_file.
    key_file: str = ""
    # PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS).
    client_ca_file: str = ""
    # Seconds between checks of the three files for a change (mtime, size or inode, as a renewal or
    # a Kubernetes secret update makes); a change loads them for new connections, without a restart.
    # 0: read at start only (the OpenTelemetry Collector's reload_interval).
    reload_interval_s: float = 0.0

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file)

    def validate(self, where: str) -> None:
        if bool(self.cert_file) != bool(self.key_file):
            raise ConfigError(f"{key(where, 'cert_file')} and {key(where, 'key_file')} go together: "
                              "set both or neither")
        if self.client_ca_file and not self.enabled:
            raise ConfigError(f"{key(where, 'client_ca_file')} needs {key(where, 'cert_file')} and "
                              f"{key(where, 'key_file')}: mutual TLS is TLS first")
        require(math.isfinite(self.reload_interval_s) and self.reload_interval_s >= 0,
                key(where, "reload_interval_s"), "a number of seconds, 0 or more", self.reload_interval_s)
        for name in ("cert_file", "key_file", "client_ca_file"):
            path = getattr(self, name)
            if path and not Path(path).is_file():
                raise ConfigError(f"{key(where, name)}: no file {path!r}")
        if self.enabled:
            self.server_context(where)  # unreadable or mismatched files stop the start, naming the key

    def server_context(self, where: str = "tls") -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        # HTTP/1.1 only: the receivers and /metrics speak nothing else.
        context.set_alpn_protocols(["http/1.1"])
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
            if self.client_ca_file:
                context.load_verify_locations(self.client_ca_file)
                context.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as e:
            raise ConfigError(f"{where}: cannot load the certificate, key or client CA: {e}") from e
        return context

    def read(self) -> tuple[bytes, bytes, bytes | None]:
        """Key, certificate chain and client CA as bytes (grpc takes them so)."""
        ca = Path(self.client_ca_file).read_bytes() if self.client_ca_file else None
        return Path(self.key_file).read_bytes(), Path(self.cert_file).read_bytes(), ca


class Reloading(Generic[T]):
    """What a server builds from the TLS files (an SSLContext, grpc's certificate configuration),
    rebuilt when the files change. The check (three stats) runs at most once per
    reload_interval_s, on the thread of a connection that is about to handshake, never in a thread
    of its own; one connection checks while the others go on with what is loaded. A rebuilt value
    replaces the old one whole: connections in progress keep the one they started with.

    Files that fail to load keep the old value, counted (`on_reload(False)`) and logged; they are
    tried again when they change again (a renewal may write the certificate and the key apart)."""

    def __init__(self, config: TlsConfig, load: Callable[[], T], on_reload: Callable[[bool], None],
                 where: str) -> None:
        self._paths = [p for p in (config.cert_file, config.key_file, config.client_ca_file) if p]
        self._interval = config.reload_interval_s
        self._load = load
        self._on_reload = on_reload
        self._where = where
        self._lock = threading.Lock()
        self._stamp = self._files_stamp()
        self.current = load()
        self._next_check = time.monotonic() + self._interval

    def refresh(self) -> bool:
        """Check the files if the interval passed; True when a new value was loaded."""
        if not self._interval or time.monotonic() < self._next_check:
            return False
        if not self._lock.acquire(blocking=False):
            return False
        try:
            self._next_check = time.monotonic() + self._interval
            stamp = self._files_stamp()
            if stamp == self._stamp:
                return False
            self._stamp = stamp
            try:
                loaded = self._load()
            except (ConfigError, OSError, ssl.SSLError) as e:
                # The error names the files and OpenSSL's complaint, never their contents.
                log.warning("%s: the TLS files changed but do not load; keeping the certificate in use: %s",
                            self._where, e)
                self._on_reload(False)
                return False
            self.current = loaded
            self._on_reload(True)
            log.info("%s: TLS certificate reloaded", self._where)
            return True
        finally:
            self._lock.release()

    def get(self) -> T:
        self.refresh()
        return self.current

    def _files_stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        stamps: list[tuple[int, int, int] | None] = []
        for path in self._paths:
            try:
                st = os.stat(path)  # follows the symlinks a Kubernetes secret volume swaps
            except OSError:
                stamps.append(None)
            else:
                stamps.append((st.st_mtime_ns, st.st_size, st.st_ino))
        return tuple(stamps)


def server_contexts(config: TlsConfig, where: str, on_reload: Callable[[bool], None]) -> Reloading[ssl.SSLContext]:
    """An HTTP server's SSLContext, reloaded as configured."""
    return Reloading(config, lambda: config.server_context(where), on_reload, where)

"""TLS for ragpulse's servers (the OTLP receivers, /metrics and the live page), after the
OpenTelemetry Collector's `configtls` server settings: a certificate and key turn TLS on, a client CA
makes it mutual (a client without a certificate signed by it is refused in the handshake)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path

from ragpulse.core.settings import ConfigError, key


@dataclass
class TlsConfig:
    # PEM certificate (chain) the server presents; with key_file, turns TLS on. Empty: plain text.
    cert_file: str = ""
    # PEM private key of cert_file.
    key_file: str = ""
    # PEM CA bundle: when set, clients must present a certificate it signed (mutual TLS).
    client_ca_file: str = ""

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

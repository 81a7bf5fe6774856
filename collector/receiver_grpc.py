"""OTLP/gRPC receiver: the TraceService Export call, and the LogsService Export call, where only the
GenAI events among the log records are read (collector/otlp_logs.py).

The request arrives as bytes and is decoded here, not by grpc: grpc answers a message its
deserializer cannot read with INTERNAL, which says "ragpulse is broken" and which exporters retry,
where the client's message is what is wrong (INVALID_ARGUMENT, not retried). grpc itself enforces
receiver.max_request_bytes (after decompression too; RESOURCE_EXHAUSTED), the cap on calls in
progress (receiver.max_connections; RESOURCE_EXHAUSTED) and the idle timeout; those refusals happen
before this module sees the call and are not counted in ragpulse's families. With
receiver.auth the call's `authorization` metadata must carry a token (UNAUTHENTICATED otherwise,
counted); with receiver.tls the port speaks TLS, mutual with a client CA (grpc refuses a client
without a valid certificate in the handshake; grpc has no hook to count failed handshakes), and
renewed files are loaded as receiver.tls.reload_interval_s says.
"""

from __future__ import annotations

from concurrent import futures
from datetime import timedelta

import grpc
from google.rpc.error_details_pb2 import RetryInfo
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceResponse
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from ragpulse.collector.otlp_decode import OtlpDecodeError, decode_protobuf
from ragpulse.collector.otlp_logs import decode_logs_protobuf
from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.receiver_config import ReceiverConfig
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.core.endpoints import format_endpoint
from ragpulse.core.http_guard import RequestGuard
from ragpulse.core.settings import key
from ragpulse.core.tls import Reloading, TlsConfig

SERVICE = "opentelemetry.proto.collector.trace.v1.TraceService"
LOGS_SERVICE = "opentelemetry.proto.collector.logs.v1.LogsService"
TRANSPORT = "grpc"
_RETRY_INFO_KEY = "google.rpc.retryinfo-bin"


class _TraceService:
    def __init__(self, pipeline: CollectorPipeline, metrics: CollectorMetrics, guard: RequestGuard) -> None:
        self._pipeline = pipeline
        self._metrics = metrics
        self._guard = guard

    def _authenticate(self, context: grpc.ServicerContext) -> None:
        if self._guard.authenticates:
            metadata = dict(context.invocation_metadata())
            authorization = metadata.get("authorization")
            if not self._guard.authorized(authorization if isinstance(authorization, str) else None):
                self._count_refusal("invalid", "unauthenticated")
                context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong credentials")

    def export_logs(self, body: bytes, context: grpc.ServicerContext) -> ExportLogsServiceResponse:
        self._authenticate(context)
        try:
            self._pipeline.consume_logs_request(decode_logs_protobuf(body))
        except OtlpDecodeError as e:
            self._count_refusal("invalid", e.reason)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, e.message)
        self._metrics.requests.labels(transport=TRANSPORT, outcome="ok").inc()
        return ExportLogsServiceResponse()

    def export(self, body: bytes, context: grpc.ServicerContext) -> ExportTraceServiceResponse:
        self._authenticate(context)
        try:
            result = self._pipeline.consume_export_request(decode_protobuf(body), TRANSPORT)
        except OtlpDecodeError as e:
            self._count_refusal("invalid", e.reason)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, e.message)
        except BusFull as e:
            self._count_refusal("retry_later", "bus_full")
            # UNAVAILABLE is the code OTLP exporters retry; RetryInfo says when, as Retry-After on HTTP.
            delay = RetryInfo()
            delay.retry_delay.FromTimedelta(timedelta(seconds=e.retry_after_s))
            context.set_trailing_metadata(((_RETRY_INFO_KEY, delay.SerializeToString()),))
            context.abort(grpc.StatusCode.UNAVAILABLE, "ragpulse is busy; retry later")
        self._metrics.requests.labels(transport=TRANSPORT, outcome="ok").inc()
        response = ExportTraceServiceResponse()
        if result.rejected_spans:
            response.partial_success.rejected_spans = result.rejected_spans
            response.partial_success.error_message = result.error_message
        return response

    def _count_refusal(self, outcome: str, reason: str) -> None:
        self._metrics.requests.labels(transport=TRANSPORT, outcome=outcome).inc()
        self._metrics.refused.labels(transport=TRANSPORT, reason=reason).inc()


def _credentials(tls: TlsConfig, metrics: CollectorMetrics) -> grpc.ServerCredentials:
    """grpc asks the fetcher before each handshake; None keeps the configuration it has."""

    def load() -> grpc.ServerCertificateConfiguration:
        tls.server_context(key("receiver", "tls"))  # a key that does not match its certificate fails here
        private_key, chain, client_ca = tls.read()
        return grpc.ssl_server_certificate_configuration([(private_key, chain)], root_certificates=client_ca)

    files = Reloading(tls, load, metrics.grpc_tls.reloaded, key("receiver", "tls"))
    return grpc.dynamic_ssl_server_credentials(
        files.current, lambda: files.current if files.refresh() else None,
        require_client_authentication=bool(tls.client_ca_file))


class OtlpGrpcReceiver:
    protocol = "grpc"

    def __init__(
        self, host: str, port: int, pipeline: CollectorPipeline, metrics: CollectorMetrics, config: ReceiverConfig
    ) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="otlp-grpc"),
            options=[
                ("grpc.max_receive_message_length", config.max_request_bytes),
                ("grpc.max_connection_idle_ms", int(config.idle_timeout_s * 1000)),
                # grpc sets SO_REUSEPORT unless told not to: a second collector on a taken port would
                # silently share it. Only receiver.workers' processes share it, on purpose.
                ("grpc.so_reuseport", int(config.workers > 1)),
            ],
            # Calls beyond the workers wait in a queue, each holding its message: bounded too.
            maximum_concurrent_rpcs=config.max_connections,
        )
        service = _TraceService(pipeline, metrics, config.guard(host))
        # No request_deserializer: the handler gets the bytes and decodes them itself.
        handler = grpc.unary_unary_rpc_method_handler(
            service.export, response_serializer=ExportTraceServiceResponse.SerializeToString
        )
        logs_handler = grpc.unary_unary_rpc_method_handler(
            service.export_logs, response_serializer=ExportLogsServiceResponse.SerializeToString
        )
        self._server.add_generic_rpc_handlers([grpc.method_handlers_generic_handler(SERVICE, {"Export": handler}),
                                               grpc.method_handlers_generic_handler(LOGS_SERVICE,
                                                                                    {"Export": logs_handler})])
        address = format_endpoint(host, port)
        try:
            if config.tls.enabled:
                self.port = self._server.add_secure_port(address, _credentials(config.tls, metrics))
            else:
                self.port = self._server.add_insecure_port(address)
        except RuntimeError as e:  # grpc's word for a port it cannot bind (taken, not ours)
            raise OSError(f"cannot listen for OTLP gRPC on {address}: {e}") from None
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP gRPC on {address}")
        self.endpoint = format_endpoint(host, self.port)

    def start(self) -> None:
        self._server.start()

    def stop(self, grace_s: float = 2.0) -> None:
        self._server.stop(grace_s).wait()

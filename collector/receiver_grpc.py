"""OTLP/gRPC receiver: the TraceService Export call."""

from __future__ import annotations

from concurrent import futures

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from ragpulse.collector.pipeline import CollectorPipeline
from ragpulse.collector.telemetry import CollectorMetrics
from ragpulse.core.bus import BusFull
from ragpulse.core.endpoints import format_endpoint


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, pipeline: CollectorPipeline, metrics: CollectorMetrics) -> None:
        self._pipeline = pipeline
        self._metrics = metrics

    def Export(  # noqa: N802 - generated service naming
        self, request: ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> ExportTraceServiceResponse:
        try:
            result = self._pipeline.consume_export_request(request, "grpc")
        except BusFull:
            self._metrics.requests.labels(transport="grpc", outcome="retry_later").inc()
            # UNAVAILABLE is the code OTLP exporters retry with backoff.
            context.abort(grpc.StatusCode.UNAVAILABLE, "ragpulse is busy; retry later")
        self._metrics.requests.labels(transport="grpc", outcome="ok").inc()
        response = ExportTraceServiceResponse()
        if result.rejected_spans:
            response.partial_success.rejected_spans = result.rejected_spans
            response.partial_success.error_message = result.error_message
        return response


class OtlpGrpcReceiver:
    protocol = "grpc"

    def __init__(
        self, host: str, port: int, pipeline: CollectorPipeline, metrics: CollectorMetrics, max_request_bytes: int
    ) -> None:
        self._server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="otlp-grpc"),
            options=[("grpc.max_receive_message_length", max_request_bytes)],
        )
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(pipeline, metrics), self._server)
        self.port = self._server.add_insecure_port(format_endpoint(host, port))
        if self.port == 0:
            raise OSError(f"cannot listen for OTLP gRPC on {host}:{port}")
        self.endpoint = format_endpoint(host, self.port)

    def start(self) -> None:
        self._server.start()

    def stop(self, grace_s: float = 2.0) -> None:
        self._server.stop(grace_s).wait()

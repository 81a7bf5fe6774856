"""Demo traffic for `ragpulse up --demo`: a small RAG app instrumented with the real OTel SDK.

The examples are written for ragpulse (English and Japanese, faithful and unfaithful answers), so a
newcomer sees scores move on /metrics without an app of their own.
"""

from __future__ import annotations

import random
import threading
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


@dataclass(frozen=True)
class DemoExchange:
    service: str
    route: str
    question: str
    contexts: tuple[str, ...]
    faithful_answer: str
    unfaithful_answer: str


EXCHANGES = (
    DemoExchange(
        "support-bot",
        "/billing",
        "How many days do customers have to return a product for a refund?",
        (
            "Customers may return any product within 30 days of delivery for a full refund. "
            "Items must be unused and in their original packaging.",
            "Refunds are issued to the original payment method within 5 business days of receipt.",
        ),
        "Customers have 30 days from delivery to return a product for a full refund, and the refund "
        "reaches the original payment method within 5 business days.",
        "Customers have 90 days to return a product, and refunds are paid in cash at any store.",
    ),
    DemoExchange(
        "support-bot",
        "/accounts",
        "How do I reset my password?",
        (
            "To reset your password, open Settings, choose Security and click Reset password. "
            "A reset link is sent to your registered email address and expires after 24 hours.",
        ),
        "Open Settings, choose Security and click Reset password; the link sent to your email expires "
        "after 24 hours.",
        "Call our hotline and an agent will read your old password to you over the phone.",
    ),
    DemoExchange(
        "docs-assistant",
        "/search",
        "Which port does the OTLP HTTP receiver listen on by default?",
        (
            "The OTLP HTTP receiver listens on port 4318 by default, and the gRPC receiver on port 4317.",
            "Both receivers bind to the loopback interface unless configured otherwise.",
        ),
        "By default the OTLP HTTP receiver listens on port 4318 on the loopback interface.",
        "The OTLP HTTP receiver listens on port 8080 on all interfaces by default.",
    ),
    DemoExchange(
        "社内ヘルプデスク",
        "/hr",
        "有給休暇は年に何日もらえますか？",
        (
            "正社員には入社6か月後に10日の年次有給休暇が付与されます。その後は勤続年数に応じて毎年増え、最大20日になります。",
        ),
        "入社6か月後に10日の有給休暇が付与され、勤続年数に応じて最大20日まで増えます。",
        "有給休暇は入社初日に30日付与され、翌年に全て繰り越せます。",
    ),
    DemoExchange(
        "社内ヘルプデスク",
        "/it",
        "VPNに接続できないときはどうすればよいですか？",
        (
            "VPNに接続できない場合は、まずクライアントを再起動してください。それでも接続できない場合は、"
            "情報システム部の内線1234に連絡してください。",
        ),
        "まずVPNクライアントを再起動し、それでも接続できなければ情報システム部の内線1234に連絡してください。",
        "VPNは金曜日だけ利用できるので、週末まで待ってください。",
    ),
)


class DemoTraffic:
    """Sends one demo exchange every `interval_s`, unfaithful with probability `unfaithful_ratio`."""

    def __init__(self, otlp_http_endpoint: str, interval_s: float = 1.0, unfaithful_ratio: float = 0.3) -> None:
        self._endpoint = f"http://{otlp_http_endpoint}/v1/traces"
        self._interval_s = interval_s
        self._unfaithful_ratio = unfaithful_ratio
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="demo-traffic", daemon=True)
        self._providers: dict[str, TracerProvider] = {}

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for provider in self._providers.values():
            provider.shutdown()

    def _provider(self, service: str) -> TracerProvider:
        if service not in self._providers:
            provider = TracerProvider(resource=Resource.create({"service.name": service}))
            exporter = OTLPSpanExporter(endpoint=self._endpoint)
            provider.add_span_processor(BatchSpanProcessor(exporter, schedule_delay_millis=500))
            self._providers[service] = provider
        return self._providers[service]

    def _run(self) -> None:
        rng = random.Random()
        while not self._stop.is_set():
            exchange = rng.choice(EXCHANGES)
            unfaithful = rng.random() < self._unfaithful_ratio
            tracer = self._provider(exchange.service).get_tracer("ragpulse.demo")
            with tracer.start_as_current_span("rag.answer") as span:
                span.set_attribute("rag.question", exchange.question)
                span.set_attribute("rag.contexts", list(exchange.contexts))
                span.set_attribute("rag.answer", exchange.unfaithful_answer if unfaithful else exchange.faithful_answer)
                span.set_attribute("rag.route", exchange.route)
                span.set_attribute("rag.model", "demo-llm")
            self._stop.wait(self._interval_s)

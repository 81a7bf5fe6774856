"""Overload: `ragpulse up` offered --factor times the rate its scorer sustains, by apps instrumented
with the real OpenTelemetry SDK (BatchSpanProcessor, OTLP exporter, default timeouts and retries).

    python bench/overload.py [--factor 10] [--seconds 30] [--apps 4] [--batch 200] [--capacity 10000]
                             [--transport http|grpc] [--max-rss-mb 400]

1. Calibration: --calibration records sent with room to spare; the scorer's rate over them is the
   sustainable rate R (records/s, local judge, ~3 KB of RAG text per record, each text distinct).
2. Overload: the apps create --factor x R spans/s for --seconds, exported in batches of --batch.
   Each exporter is wrapped to note which spans it got an acknowledgement (HTTP 200 / gRPC OK) for.
3. Drain: the apps shut down (their exporters retry what is queued), ragpulse scores its backlog.

Prints a curve every --every seconds (acknowledged, refused requests, scored, queue depth, RSS)
and the result: records scored must equal distinct records acknowledged, exactly, with no
duplicate skipped (nothing of a refused request reached the bus), and ragpulse's peak RSS must
stay under --max-rss-mb. Exits 1 when either fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult  # noqa: E402
from ragpulse_process import RagpulseProcess  # noqa: E402

SERVICE = "overload"
CONTEXT = ("Tokyo, officially the Tokyo Metropolis, is the capital of Japan and one of the most populous "
           "urban areas in the world. The metropolis had an estimated population of about {n} residents, "
           "while the Greater Tokyo Area is home to roughly 37 million people. 東京都の人口は約{n}人で、"
           "日本の都道府県で最も多い。Population growth slowed in recent years. ") * 3


class AckRecorder(SpanExporter):
    """The app's real exporter, noting the record ids of every batch it was acknowledged for."""

    def __init__(self, exporter: SpanExporter, acknowledged: list[str], failed: list[str]) -> None:
        self._exporter = exporter
        self._acknowledged = acknowledged
        self._failed = failed

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        result = self._exporter.export(spans)
        ids = [f"{s.context.trace_id:032x}-{s.context.span_id:016x}" for s in spans]
        (self._acknowledged if result == SpanExportResult.SUCCESS else self._failed).extend(ids)
        return result

    def shutdown(self) -> None:
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._exporter.force_flush(timeout_millis)


class App:
    """One instrumented process's worth of tracing: a provider, a BatchSpanProcessor, an exporter."""

    def __init__(self, transport: str, endpoint: str, batch: int) -> None:
        self.acknowledged: list[str] = []
        self.failed: list[str] = []
        exporter: SpanExporter = (GrpcExporter(endpoint=f"http://{endpoint}", insecure=True) if transport == "grpc"
                                  else HttpExporter(endpoint=f"http://{endpoint}/v1/traces"))
        self.provider = TracerProvider(resource=Resource.create({"service.name": SERVICE}))
        self.provider.add_span_processor(BatchSpanProcessor(
            AckRecorder(exporter, self.acknowledged, self.failed), max_export_batch_size=batch))
        self.tracer = self.provider.get_tracer("bench.overload")
        self.created = 0

    def answer(self, n: int) -> None:
        with self.tracer.start_as_current_span("rag") as span:
            span.set_attribute("rag.question", f"What is the population of Tokyo (question {n})?")
            span.set_attribute("rag.contexts", [CONTEXT.format(n=14_000_000 + n)])
            span.set_attribute("rag.answer", f"Tokyo has about {14_000_000 + n} residents; growth has slowed.")
        self.created += 1

    def run(self, rate: float, seconds: float, first: int, stride: int) -> None:
        started = time.monotonic()
        n = first
        while (elapsed := time.monotonic() - started) < seconds:
            due = int(elapsed * rate) + 1
            while self.created < due:
                self.answer(n)
                n += stride
            time.sleep(max(0.0, (self.created / rate) - (time.monotonic() - started)))


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def scored(proc: RagpulseProcess) -> float:
    return proc.value("ragpulse_records_scored_total", service=SERVICE)


def wait_until_scored(proc: RagpulseProcess, count: int, timeout_s: float) -> float:
    deadline = time.monotonic() + timeout_s
    while (done := scored(proc)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return done


def calibrate(proc: RagpulseProcess, transport: str, endpoint: str, records: int) -> float:
    app = App(transport, endpoint, 200)
    for n in range(records):
        app.answer(10_000_000 + n)
    app.provider.force_flush()
    start_count, started = scored(proc), time.monotonic()
    # The first records were scored while the rest were still arriving: time from here.
    wait_until_scored(proc, records, 600)
    rate = (records - start_count) / (time.monotonic() - started)
    app.provider.shutdown()
    return rate


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--factor", type=float, default=10.0)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--apps", type=int, default=4)
    parser.add_argument("--batch", type=int, default=200, help="spans per export request")
    parser.add_argument("--capacity", type=int, default=10_000, help="bus.memory.capacity")
    parser.add_argument("--transport", choices=["http", "grpc"], default="http")
    parser.add_argument("--calibration", type=int, default=1500)
    parser.add_argument("--every", type=float, default=5.0)
    parser.add_argument("--max-rss-mb", type=float, default=400.0)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="ragpulse-overload-"))
    settings = {"bus": {"memory": {"capacity": args.capacity}}}
    proc = RagpulseProcess(tmp, settings)
    try:
        endpoint = proc.grpc if args.transport == "grpc" else proc.http
        idle_rss = rss_mb(proc.proc.pid)
        rate = calibrate(proc, args.transport, endpoint, args.calibration)
        base = scored(proc)
        offered = rate * args.factor
        print(f"cpu: {cpu_model()} ({os.cpu_count()} cpus); idle RSS {idle_rss:.0f} MB")
        print(f"sustainable (calibration, {args.calibration} records): {rate:.1f} records/s; "
              f"offered: {offered:.0f} spans/s for {args.seconds:g} s from {args.apps} apps, "
              f"batches of {args.batch}, {args.transport}, bus.memory.capacity {args.capacity}")

        apps = [App(args.transport, endpoint, args.batch) for _ in range(args.apps)]
        threads = [threading.Thread(target=app.run, args=(offered / args.apps, args.seconds, i, args.apps))
                   for i, app in enumerate(apps)]
        started = time.monotonic()
        for t in threads:
            t.start()
        print(f"{'t s':>6} {'created':>8} {'acked':>8} {'503s':>6} {'scored':>7} {'queue':>6} {'RSS MB':>7}")

        def row() -> None:
            print(f"{time.monotonic() - started:6.0f} {sum(a.created for a in apps):8d} "
                  f"{sum(len(a.acknowledged) for a in apps):8d} "
                  f"{proc.value('ragpulse_otlp_requests_total', outcome='retry_later'):6.0f} "
                  f"{scored(proc) - base:7.0f} {proc.value('ragpulse_queue_depth'):6.0f} "
                  f"{rss_mb(proc.proc.pid):7.0f}", flush=True)

        stop_rows = threading.Event()

        def rows() -> None:
            while not stop_rows.wait(args.every):
                row()

        printer = threading.Thread(target=rows, daemon=True)
        printer.start()
        for t in threads:
            t.join()
        for app in apps:
            app.provider.shutdown()  # the exporters send (and retry) what their queues still hold
        acknowledged = [rid for app in apps for rid in app.acknowledged]
        distinct = set(acknowledged)
        done = wait_until_scored(proc, base + len(distinct), timeout_s=3600)
        time.sleep(2)  # anything scored beyond the acknowledged would show now
        stop_rows.set()
        row()
        done = scored(proc) - base
        created = sum(a.created for a in apps)
        failed = sum(len(a.failed) for a in apps)
        duplicates = proc.value("ragpulse_scorer_records_skipped_total", reason="duplicate")
        peak = rss_mb(proc.proc.pid, "VmHWM")
        exact = done == len(distinct) and duplicates == 0 and len(acknowledged) == len(distinct)
        print(f"created {created}, acknowledged {len(acknowledged)} ({len(distinct)} distinct), exporters gave up on "
              f"{failed}, dropped in the apps' queues {created - len(acknowledged) - failed}")
        print(f"scored {done:.0f} (+{args.calibration} calibration), duplicates skipped {duplicates:.0f}, "
              f"503 / UNAVAILABLE answers {proc.value('ragpulse_otlp_requests_total', outcome='retry_later'):.0f}, "
              f"ok {proc.value('ragpulse_otlp_requests_total', outcome='ok'):.0f}")
        print(f"scored == distinct acknowledged: {'yes' if exact else 'NO'}; peak RSS {peak:.0f} MB "
              f"(ceiling {args.max_rss_mb:g} MB): {'under' if peak <= args.max_rss_mb else 'OVER'}")
        return 0 if exact and peak <= args.max_rss_mb else 1
    finally:
        proc.stop()


if __name__ == "__main__":
    sys.exit(main())

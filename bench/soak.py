"""Soak: `ragpulse up` under steady, moderate load for --minutes, with its RSS, open file
descriptors and threads sampled every minute; after a warm-up each series must stay flat.

    python bench/soak.py [--minutes 30] [--rate 6] [--noise 10] [--warmup 5]
                         [--rss-margin-mb 30] [--rss-margin-pct 10] [--fd-margin 10] [--thread-margin 10]
                         [--tracemalloc FRAMES --snapshots DIR --snapshot-every MIN]

Load, from apps instrumented with the real OpenTelemetry SDK (TracerProvider, BatchSpanProcessor,
OTLP exporters with their defaults), half over HTTP and half over gRPC:
- --rate RAG records/s: single `rag.*` spans from a bounded set of services and routes, English
  and Japanese text, each text distinct; one record in ten is an OpenInference-style trace of four
  spans (CHAIN root, RETRIEVER, LLM, and a plain child) that the collector assembles;
- --noise plain spans/s with no RAG triple (counted and dropped by the collector);
- every minute a short-lived app with a service name never seen before (and a new route), so the
  label cap (prometheus.label_cap, set to 12 here) is reached and later names become `other`;
- every 10 s one malformed request (garbage protobuf, bad JSON, an unsupported content type over
  HTTP; garbage bytes over gRPC);
- every minute idle connections opened and left: one HTTP keep-alive connection after a request,
  one bare TCP connection to each receiver and to /metrics. The receivers close idle connections
  after receiver.idle_timeout_s (60 s); this side closes its end after 150 s.
- one service is sampled at 50 % (sampling.per_service), so records are dropped by rule too.

Every minute: VmRSS and Threads from /proc/<pid>/status, open fds (len(/proc/<pid>/fd)), and the
/metrics counters. At the end the apps shut down, the queue drains, and the books must balance:
records received = scored + skipped + dead-lettered + dropped + still queued.

Flat: over the samples after --warmup minutes, max - min of RSS <= max(--rss-margin-mb,
--rss-margin-pct % of the smallest), of fds <= --fd-margin, of threads <= --thread-margin.
Exits 1 when a series is not flat or the books do not balance, and says which.

--tracemalloc FRAMES (a diagnostic; its RSS is not the product's: tracemalloc costs memory and
CPU): ragpulse runs with PYTHONTRACEMALLOC=FRAMES and bench/tracemalloc_site first on its
PYTHONPATH, which writes a tracemalloc snapshot and a line of totals (traced, VmRSS, glibc heap)
into --snapshots every --snapshot-every minutes; bench/soak_tracemalloc.py compares them.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
import grpc  # noqa: E402
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter  # noqa: E402
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter  # noqa: E402
from opentelemetry.sdk.resources import Resource  # noqa: E402
from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter  # noqa: E402
from opentelemetry.trace import Tracer  # noqa: E402
from ragpulse_process import RagpulseProcess  # noqa: E402

SERVICES = ["shop", "kb-ja", "support", "docs-search"]
ROUTES = ["/faq", "/chat", "/search", "/ja/faq"]
SAMPLED_SERVICE = "kb-ja"  # kept at 50 %
LABEL_CAP = 12

EN = [
    ("What is the population of Tokyo (ask {n})?",
     "Tokyo, officially the Tokyo Metropolis, is the capital of Japan. The metropolis had about {p} "
     "residents in survey {n}, while the Greater Tokyo Area is home to roughly 37 million people.",
     "Tokyo has about {p} residents."),
    ("How long is the warranty on order {n}?",
     "All appliances sold in the shop carry a warranty of {w} months from delivery. Order {n} was "
     "delivered on a weekday. Batteries are covered for six months only.",
     "The warranty on order {n} lasts {w} months from delivery; batteries six months."),
    ("Which port does service {n} listen on?",
     "Service {n} listens on port {p} by default. The port can be changed in the configuration "
     "file. Health checks use the same port under /health.",
     "It listens on port {p}, and health checks use /health on the same port."),
]
JA = [
    ("東京都の人口は何人ですか（質問{n}）？",
     "東京都は日本の首都であり、調査{n}によると人口は約{p}人である。首都圏全体では約3700万人が暮らしている。",
     "東京都の人口は約{p}人です。"),
    ("注文{n}の保証期間はどのくらいですか？",
     "当店で販売する家電製品には、配送日から{w}か月の保証が付きます。バッテリーの保証は6か月です。",
     "注文{n}の保証期間は配送日から{w}か月で、バッテリーは6か月です。"),
]


def texts(n: int) -> tuple[str, str, str]:
    q, c, a = (JA if n % 3 == 0 else EN)[n % (2 if n % 3 == 0 else 3)]
    values = {"n": n, "p": 14_000_000 + n, "w": 12 + n % 24}
    return q.format(**values), c.format(**values), a.format(**values)


def exporter(transport: str, proc: RagpulseProcess) -> SpanExporter:
    if transport == "grpc":
        return GrpcExporter(endpoint=f"http://{proc.grpc}", insecure=True)
    return HttpExporter(endpoint=f"http://{proc.http}/v1/traces")


class App:
    """One instrumented service: provider, batch processor (default 5 s schedule), exporter."""

    def __init__(self, service: str, transport: str, proc: RagpulseProcess) -> None:
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(BatchSpanProcessor(exporter(transport, proc), schedule_delay_millis=1000))
        self.tracer: Tracer = self.provider.get_tracer("bench.soak")


def rag_span(tracer: Tracer, n: int, route: str) -> None:
    q, c, a = texts(n)
    with tracer.start_as_current_span("rag") as span:
        span.set_attribute("rag.question", q)
        span.set_attribute("rag.contexts", [c, f"Unrelated note {n}: the office closes at 18:00."])
        span.set_attribute("rag.answer", a)
        span.set_attribute("rag.route", route)


def openinference_trace(tracer: Tracer, n: int, route: str) -> None:
    q, c, a = texts(n)
    with tracer.start_as_current_span("RetrieverQueryEngine.query") as root:
        root.set_attribute("openinference.span.kind", "CHAIN")
        root.set_attribute("input.value", q)
        root.set_attribute("rag.route", route)
        with tracer.start_as_current_span("BaseRetriever.retrieve") as r:
            r.set_attribute("openinference.span.kind", "RETRIEVER")
            r.set_attribute("input.value", q)
            r.set_attribute("retrieval.documents.0.document.content", c)
            r.set_attribute("retrieval.documents.0.document.score", 0.9)
        with tracer.start_as_current_span("OpenAI.chat") as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            llm.set_attribute("llm.model_name", "gpt-4o-mini")
            llm.set_attribute("llm.output_messages.0.message.role", "assistant")
            llm.set_attribute("llm.output_messages.0.message.content", a)
        with tracer.start_as_current_span("format"):
            pass
        root.set_attribute("output.value", a)


def noise_span(tracer: Tracer, n: int) -> None:
    with tracer.start_as_current_span("GET /health") as span:
        span.set_attribute("http.request.method", "GET")
        span.set_attribute("http.response.status_code", 200)
        span.set_attribute("n", n)


def malformed(proc: RagpulseProcess, k: int) -> None:
    """One request the receivers must refuse (400 / INVALID_ARGUMENT), never crash on."""
    kind = k % 4
    if kind == 3:
        with grpc.insecure_channel(proc.grpc) as channel:
            call = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                                       request_serializer=None, response_deserializer=None)
            try:
                call(b"\xff\xfe garbage " + os.urandom(32), timeout=5)
            except grpc.RpcError:
                pass
        return
    body, ctype = [(b"\x0a\xff\xff\xff\xff garbage" + os.urandom(16), "application/x-protobuf"),
                   (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 12', "application/json"),
                   (b"hello", "text/plain")][kind]
    request = urllib.request.Request(f"http://{proc.http}/v1/traces", data=body, method="POST",
                                     headers={"Content-Type": ctype})
    try:
        urllib.request.urlopen(request, timeout=5).read()
    except (urllib.error.HTTPError, OSError):
        pass


def open_idle(proc: RagpulseProcess) -> list[object]:
    """Connections left open: a keep-alive HTTP connection after one request, and bare TCP
    connections to each receiver and to /metrics that never send a byte."""
    left: list[object] = []
    conn = http.client.HTTPConnection(proc.http, timeout=5)
    try:
        conn.request("POST", "/v1/traces", body=b"{}", headers={"Content-Type": "application/json"})
        conn.getresponse().read()
        left.append(conn)
    except OSError:
        conn.close()
    for address in (proc.http, proc.grpc, proc.metrics):
        host, port = address.rsplit(":", 1)
        try:
            left.append(socket.create_connection((host, int(port)), timeout=5))
        except OSError:
            pass
    return left


def proc_status(pid: int) -> tuple[float, int, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.split()
    return int(fields["VmRSS"][0]) / 1024, len(os.listdir(f"/proc/{pid}/fd")), int(fields["Threads"][0])


COUNTERS = {
    "received": ("ragpulse_records_received_total", {}),
    "sampled": ("ragpulse_records_sampled_total", {}),
    "dropped": ("ragpulse_records_dropped_total", {}),
    "scored": ("ragpulse_records_scored_total", {}),
    "skipped": ("ragpulse_scorer_records_skipped_total", {}),
    "dead": ("ragpulse_records_dead_lettered_total", {}),
    "queue": ("ragpulse_queue_depth", {}),
    "ok": ("ragpulse_otlp_requests_total", {"outcome": "ok"}),
    "invalid": ("ragpulse_otlp_requests_total", {"outcome": "invalid"}),
    "retry": ("ragpulse_otlp_requests_total", {"outcome": "retry_later"}),
    "noise": ("ragpulse_spans_without_rag_triple_total", {}),
    "assembled": ("ragpulse_traces_assembled_total", {}),
    "pending": ("ragpulse_assembly_pending_traces", {}),
    "trace_spans_sampled_out": ("ragpulse_trace_spans_total", {"outcome": "sampled_out"}),
}


def counters(proc: RagpulseProcess) -> dict[str, float]:
    samples = proc.samples()
    out = {}
    for key, (name, labels) in COUNTERS.items():
        want = set(labels.items())
        out[key] = sum(v for (n, ls), v in samples.items() if n == name and want <= set(ls))
    out["service_labels"] = len({dict(ls).get("service") for (n, ls) in samples
                                 if n == "ragpulse_records_scored_total"})
    return out


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


class Load:
    def __init__(self, proc: RagpulseProcess, rate: float, noise: float) -> None:
        self.proc, self.rate, self.noise = proc, rate, noise
        self.apps = {(s, t): App(s, t, proc) for s in SERVICES for t in ("http", "grpc")}
        self.noise_apps = [App("frontend", t, proc) for t in ("http", "grpc")]
        self.stop = threading.Event()
        self.created = self.traces = self.noise_spans = self.malformed = self.new_services = 0
        self.idle: list[tuple[float, list[object]]] = []
        self.errors: list[str] = []

    def run(self) -> None:
        started = time.monotonic()
        rng = random.Random(7)
        next_malformed, next_minute = 10.0, 20.0
        while not self.stop.is_set():
            elapsed = time.monotonic() - started
            try:
                while self.created < int(elapsed * self.rate) + 1:
                    n = self.created
                    service, transport = SERVICES[n % len(SERVICES)], ("http", "grpc")[(n // 4) % 2]
                    tracer, route = self.apps[(service, transport)].tracer, rng.choice(ROUTES)
                    if n % 10 == 9:
                        openinference_trace(tracer, n, route)
                        self.traces += 1
                    else:
                        rag_span(tracer, n, route)
                    self.created += 1
                while self.noise_spans < int(elapsed * self.noise):
                    noise_span(self.noise_apps[self.noise_spans % 2].tracer, self.noise_spans)
                    self.noise_spans += 1
                if elapsed >= next_malformed:
                    malformed(self.proc, self.malformed)
                    self.malformed += 1
                    next_malformed += 10.0
                if elapsed >= next_minute:
                    next_minute += 60.0
                    self.minutely(elapsed)
            except Exception as exc:  # noqa: BLE001 - a soak reports and goes on
                self.errors.append(f"{elapsed:.0f}s: {exc!r}")
            self.stop.wait(0.05)

    def minutely(self, elapsed: float) -> None:
        k = self.new_services
        self.new_services += 1
        app = App(f"tenant-{k:03d}", ("http", "grpc")[k % 2], self.proc)
        for i in range(3):
            rag_span(app.tracer, 1_000_000 + 10 * k + i, f"/tenant/{k}")
        app.provider.shutdown()  # flushes and closes its connection
        self.idle.append((elapsed, open_idle(self.proc)))
        while self.idle and elapsed - self.idle[0][0] > 150:
            for c in self.idle.pop(0)[1]:
                c.close()  # type: ignore[attr-defined]

    def shutdown(self) -> None:
        self.stop.set()
        for app in [*self.apps.values(), *self.noise_apps]:
            app.provider.shutdown()
        for _, conns in self.idle:
            for c in conns:
                c.close()  # type: ignore[attr-defined]


def tracemalloc_env(frames: int, folder: Path | None, every_min: float) -> dict[str, str]:
    if not frames or folder is None:
        return {}
    site = str(Path(__file__).resolve().parent / "tracemalloc_site")
    return {"PYTHONTRACEMALLOC": str(frames), "SOAK_TRACEMALLOC_DIR": str(folder.resolve()),
            "SOAK_TRACEMALLOC_EVERY_S": str(every_min * 60),
            "PYTHONPATH": os.pathsep.join(p for p in (site, os.environ.get("PYTHONPATH")) if p)}


def spread(values: list[float]) -> float:
    return max(values) - min(values)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=float, default=6.0, help="RAG records/s")
    parser.add_argument("--noise", type=float, default=10.0, help="non-RAG spans/s")
    parser.add_argument("--warmup", type=int, default=5, help="minutes left out of the flatness check")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between samples")
    parser.add_argument("--rss-margin-mb", type=float, default=30.0)
    parser.add_argument("--rss-margin-pct", type=float, default=10.0)
    parser.add_argument("--fd-margin", type=int, default=10, help="max - min of open fds (+-5)")
    parser.add_argument("--thread-margin", type=int, default=10, help="max - min of threads (+-5)")
    parser.add_argument("--tracemalloc", type=int, default=0, metavar="FRAMES",
                        help="diagnostic: trace ragpulse's allocations with this many frames (0: off)")
    parser.add_argument("--snapshots", type=Path, help="folder for the tracemalloc snapshots")
    parser.add_argument("--snapshot-every", type=float, default=5.0, help="minutes between snapshots")
    args = parser.parse_args()
    if args.tracemalloc and args.snapshots is None:
        parser.error("--tracemalloc needs --snapshots DIR")

    tmp = Path(tempfile.mkdtemp(prefix="ragpulse-soak-"))
    settings = {"prometheus": {"label_cap": LABEL_CAP, "route_label": True},
                "sampling": {"per_service": {SAMPLED_SERVICE: 0.5}}}
    proc = RagpulseProcess(tmp, settings, env=tracemalloc_env(args.tracemalloc, args.snapshots, args.snapshot_every))
    pid = proc.proc.pid
    print(f"cpu: {cpu_model()} ({os.cpu_count()} cpus), load average {os.getloadavg()[0]:.1f}; "
          f"ragpulse pid {pid}, log {proc.log_path}")
    print(f"load: {args.rate:g} RAG records/s (1 in 10 a 4-span OpenInference trace), {args.noise:g} "
          f"non-RAG spans/s, HTTP and gRPC; a new service each minute (label cap {LABEL_CAP}); "
          f"a malformed request every 10 s; 4 idle connections each minute", flush=True)
    load = Load(proc, args.rate, args.noise)
    driver = threading.Thread(target=load.run, daemon=True)
    rows: list[dict[str, float]] = []
    header = (f"{'min':>4} {'RSS MB':>7} {'fds':>4} {'thr':>4} {'created':>8} {'received':>8} {'scored':>7} "
              f"{'dropped':>7} {'queue':>5} {'ok req':>7} {'invalid':>7} {'503':>4} {'svc lbl':>7}")
    try:
        started = time.monotonic()
        driver.start()
        print(header, flush=True)
        for minute in range(0, int(args.minutes) + 1):
            time.sleep(max(0.0, started + minute * args.every - time.monotonic()))
            if proc.proc.poll() is not None:
                print(f"ragpulse exited with {proc.proc.returncode}")
                return 1
            rss, fds, threads = proc_status(pid)
            c = counters(proc)
            rows.append({"minute": minute, "rss": rss, "fds": fds, "threads": threads, **c})
            print(f"{minute:4d} {rss:7.1f} {fds:4d} {threads:4d} {load.created:8d} {c['received']:8.0f} "
                  f"{c['scored']:7.0f} {c['dropped']:7.0f} {c['queue']:5.0f} {c['ok']:7.0f} "
                  f"{c['invalid']:7.0f} {c['retry']:4.0f} {c['service_labels']:7d}", flush=True)
        load.shutdown()
        driver.join(10)
        # Drain: assembly grace, then the queue.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            c = counters(proc)
            if c["queue"] == 0 and c["pending"] == 0 and c["sampled"] == c["scored"] + c["skipped"] + c["dead"]:
                break
            time.sleep(1)
        time.sleep(3)
        c = counters(proc)
        rss, fds, threads = proc_status(pid)
        print(f"after drain: RSS {rss:.1f} MB, {fds} fds, {threads} threads; created {load.created} records "
              f"({load.traces} as 4-span traces) + {load.new_services * 3} from new services, "
              f"{load.noise_spans} non-RAG spans, {load.malformed} malformed requests")
        print("counters: " + ", ".join(f"{k} {v:.0f}" for k, v in c.items()))
        books = c["scored"] + c["skipped"] + c["dead"] + c["dropped"] + c["queue"]
        balanced = c["received"] == books
        print(f"received {c['received']:.0f} = scored {c['scored']:.0f} + skipped {c['skipped']:.0f} + "
              f"dead-lettered {c['dead']:.0f} + dropped {c['dropped']:.0f} + queued {c['queue']:.0f} "
              f"({books:.0f}): {'yes' if balanced else 'NO'}")
        if load.errors:
            print(f"driver errors ({len(load.errors)}): {load.errors[:5]}")

        steady = [r for r in rows if r["minute"] >= args.warmup]
        failures = []
        if len(steady) >= 2:
            rss_values = [r["rss"] for r in steady]
            rss_margin = max(args.rss_margin_mb, min(rss_values) * args.rss_margin_pct / 100)
            for name, values, margin, unit in (
                ("RSS", rss_values, rss_margin, " MB"),
                ("open fds", [r["fds"] for r in steady], args.fd_margin, ""),
                ("threads", [r["threads"] for r in steady], args.thread_margin, ""),
            ):
                s = spread(values)
                slope = (values[-1] - values[0]) / (len(values) - 1)
                ok = s <= margin
                print(f"{name}: minutes {args.warmup}-{steady[-1]['minute']:.0f}: {min(values):.1f}..{max(values):.1f}"
                      f"{unit}, max - min {s:.1f} (margin {margin:.1f}): {'flat' if ok else 'NOT FLAT'}; "
                      f"last - first {values[-1] - values[0]:+.1f} ({slope:+.2f}/min)")
                if not ok:
                    failures.append(name)
        if not balanced:
            failures.append("books")
        if load.errors:
            failures.append("driver errors")
        print("verdict: " + ("flat, books balance" if not failures else "FAILED: " + ", ".join(failures)))
        (tmp / "soak.json").write_text(json.dumps(rows))
        return 0 if not failures else 1
    finally:
        load.stop.set()
        proc.stop()


if __name__ == "__main__":
    sys.exit(main())

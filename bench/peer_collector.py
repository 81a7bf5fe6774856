"""Collector cost per span, side by side with the OpenTelemetry Collector (the peer).

    bash bench/build_otelcol.sh        # once: the peer, into ~/.cache/ragpulse/otelcol
    RAGPULSE_KAFKA_HOME=~/.cache/ragpulse/kafka \\
        .venv/bin/python bench/peer_collector.py [--spans 20000] [--rounds 3] [--workers 1,2] \\
        [--connections 2] [--baseline REV] [--write-results]

The collectors run at once against one real broker (deploy/kafka/broker.sh, on a free port) and
take the same pre-encoded OTLP/HTTP protobuf requests (100 spans each) from a client process with
one thread per keep-alive connection (--connections); they are measured alternately, round after
round (the order reversed every other round), so machine load hits all alike. `--workers 1,2` runs
one ragpulse collector per worker count (receiver.workers); the kernel spreads connections over
a collector's workers, so give it several (--connections 16). Its CPU is that of the parent and
its workers together. `--baseline REV` adds ragpulse as of a git revision (one worker, run from
`git archive REV` with the same venv), for a before/after ratio measured in the same rounds.

- otelcol: otlpreceiver (HTTP) → batch processor → kafka exporter (`otlp_proto`, acks all, lz4,
  `partition_traces_by_id`: one message per trace per batch). It forwards every span.
- ragpulse: `ragpulse collector` with its Kafka bus (acks all, idempotent, lz4), default
  conventions; it forwards one record per RAG span and drops the rest, counted.

Two payloads: RAG spans (~2.7 KB of rag.question / rag.contexts / rag.answer each, one trace per
span), and mixed traces (20 spans: 1 RAG span + 19 HTTP/DB spans with 10 attributes each).

For each collector and round: spans/s from the client's first request until the broker's end
offsets on that collector's topic hold every message, and CPU ms per 1,000 spans from
/proc/<pid>/stat (utime + stime) over the same interval. Nothing lost: the otelcol topic is read
back at the end and its spans counted; the ragpulse topic must hold one record per RAG span.

Targets (issue "Collector cost per span within 2x of the OpenTelemetry Collector"): ragpulse's CPU
per span <= 2x otelcol's on mixed traffic, <= 3x on RAG spans.
"""

from __future__ import annotations

import argparse
import http.client
import os
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
sys.path.insert(0, str(REPO / "bench"))
from kafka_broker import KafkaBroker, free_port, kafka_home  # noqa: E402
from kafka_throughput import ANSWER, CONTEXT, QUESTION, cpu_model, wait_line  # noqa: E402

SPANS_PER_REQUEST = 100
TRACE_SPANS = 20
OTELCOL_HOME = Path(os.environ.get("RAGPULSE_OTELCOL_HOME", Path.home() / ".cache" / "ragpulse" / "otelcol"))
OTELCOL = OTELCOL_HOME / "otelcol-ragpulse-peer" / "bin" / "otelcol-ragpulse-peer"
CLK_TCK = os.sysconf("SC_CLK_TCK")


# ---------------------------------------------------------------------------------------------
# Payloads


def _kv(key: str, value: Any) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    if isinstance(value, list):
        return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(
            values=[AnyValue(string_value=v) for v in value])))
    if isinstance(value, int):
        return KeyValue(key=key, value=AnyValue(int_value=value))
    return KeyValue(key=key, value=AnyValue(string_value=value))


def rag_attributes(i: int) -> list[Any]:
    contexts = [f"[{i}:{k}] " + CONTEXT + CONTEXT[:380] for k in range(3)]
    return [_kv("rag.question", f"{QUESTION}({i})"), _kv("rag.contexts", contexts),
            _kv("rag.answer", f"{ANSWER} ({i})")]


def http_attributes(i: int, k: int) -> list[Any]:
    return [_kv("http.request.method", "GET"), _kv("url.full", f"https://api.example.com/v1/items/{i}/{k}?page=2"),
            _kv("url.scheme", "https"), _kv("http.route", "/v1/items/{id}/{part}"),
            _kv("http.response.status_code", 200), _kv("server.address", "api.example.com"),
            _kv("server.port", 443), _kv("network.protocol.version", "1.1"),
            _kv("client.address", "10.0.3.17"), _kv("user_agent.original", "python-httpx/0.27.0")]


def db_attributes(i: int, k: int) -> list[Any]:
    return [_kv("db.system", "postgresql"), _kv("db.namespace", "catalog"), _kv("db.operation.name", "SELECT"),
            _kv("db.collection.name", "documents"),
            _kv("db.query.text", f"SELECT id, body FROM documents WHERE tenant = $1 AND id = ANY($2) -- {i}:{k}"),
            _kv("server.address", "db.internal"), _kv("server.port", 5432),
            _kv("network.peer.address", "10.0.8.2"), _kv("network.peer.port", 5432),
            _kv("db.response.status_code", "00000")]


def otlp_bodies(spans: int, mixed: bool, seed: int) -> list[bytes]:
    """Requests of 100 spans. RAG: one trace per span. Mixed: traces of 20 spans (a root HTTP span,
    a RAG span, then HTTP and DB spans), 5 whole traces per request. `seed` keeps ids distinct
    between payload kinds."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    bodies = []
    for start in range(0, spans, SPANS_PER_REQUEST):
        request = ExportTraceServiceRequest()
        rs = request.resource_spans.add()
        rs.resource.attributes.extend([_kv("service.name", "bench"), _kv("service.version", "1.4.2"),
                                       _kv("telemetry.sdk.language", "python")])
        ss = rs.scope_spans.add()
        ss.scope.name = "bench"
        for n in range(start, min(spans, start + SPANS_PER_REQUEST)):
            trace = n // TRACE_SPANS if mixed else n
            k = n % TRACE_SPANS if mixed else 1
            span = ss.spans.add(trace_id=(seed << 64 | trace + 1).to_bytes(16, "big"),
                                span_id=(seed << 40 | n + 1).to_bytes(8, "big"),
                                start_time_unix_nano=1_700_000_000_000_000_000 + n,
                                end_time_unix_nano=1_700_000_000_050_000_000 + n, kind=1)
            if k == 0:
                span.name, span.kind = "GET /ask", 2
                span.attributes.extend(http_attributes(trace, k))
                continue
            span.parent_span_id = (seed << 40 | (n - k) + 1).to_bytes(8, "big") if mixed else b""
            if k == 1:
                span.name = "rag"
                span.attributes.extend(rag_attributes(trace))
            elif k % 2:
                span.name, span.kind = "GET", 3
                span.attributes.extend(http_attributes(trace, k))
            else:
                span.name, span.kind = "SELECT catalog.documents", 3
                span.attributes.extend(db_attributes(trace, k))
        bodies.append(request.SerializeToString())
    return bodies


def write_bodies(path: Path, bodies: list[bytes]) -> None:
    with open(path, "wb") as f:
        for body in bodies:
            f.write(struct.pack(">I", len(body)))
            f.write(body)


def read_bodies(path: str) -> list[bytes]:
    data, out, at = Path(path).read_bytes(), [], 0
    while at < len(data):
        (n,) = struct.unpack_from(">I", data, at)
        out.append(data[at + 4: at + 4 + n])
        at += 4 + n
    return out


def otlp_client(endpoint: str, body_file: str, connections: int) -> None:
    """Sends the bodies over `connections` keep-alive connections (a thread each), retrying
    429/503; prints the wall clock of its first request."""
    bodies = read_bodies(body_file)
    host, port = endpoint.rsplit(":", 1)
    print(time.time(), flush=True)
    failures: list[str] = []

    def run(part: list[bytes]) -> None:
        try:
            send(part)
        except Exception as e:  # a thread's exception would otherwise end only the thread
            failures.append(f"{type(e).__name__}: {e}")

    def send(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        for body in part:
            while True:
                conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    break
                if response.status not in (429, 503):
                    failures.append(f"collector answered {response.status}")
                    return
                time.sleep(float(response.getheader("Retry-After", "0.2") or 0.2))

    threads = [threading.Thread(target=run, args=(bodies[k::connections],)) for k in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:
        raise SystemExit(failures[0])


# ---------------------------------------------------------------------------------------------
# The two collectors


def _stat(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_s(pid: int) -> float:
    """CPU seconds of a process and its children that are running (a collector's workers)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int(_stat(int(entry.name))[1]) == pid:  # field 4, the parent's pid
                    children.append(int(entry.name))
            except (OSError, IndexError):  # gone meanwhile
                continue
    total = 0.0
    for p in (pid, *children):
        fields = _stat(p)
        total += (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14 and 15)
    return total


class Collector:
    name: str
    proc: subprocess.Popen
    http_endpoint: str
    topic: str

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()


class Otelcol(Collector):
    name = "otelcol"

    def __init__(self, broker: KafkaBroker, tmp: Path, topic: str) -> None:
        self.topic = topic
        self.http_endpoint = f"127.0.0.1:{free_port()}"
        config = {
            "receivers": {"otlp": {"protocols": {"http": {"endpoint": self.http_endpoint}}}},
            "processors": {"batch": {}},
            "exporters": {"kafka": {
                "brokers": [broker.bootstrap],
                "traces": {"topic": topic, "encoding": "otlp_proto"},
                "partition_traces_by_id": True,
                "producer": {"required_acks": -1, "compression": "lz4"},
            }},
            "service": {
                "telemetry": {"logs": {"level": "warn"}, "metrics": {"level": "none"}},
                "pipelines": {"traces": {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["kafka"]}},
            },
        }
        path = tmp / "otelcol.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log = tmp / "otelcol.log"
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([str(OTELCOL), f"--config={path}"], stdout=out, stderr=subprocess.STDOUT)
        _wait_port(self.proc, self.log, self.http_endpoint)


class Ragpulse(Collector):
    def __init__(self, broker: KafkaBroker, tmp: Path, topic: str, compression: str, workers: int,
                 revision: str | None = None) -> None:
        """`revision`: ragpulse as of that git revision (one worker), from checkout_revision()."""
        self.name = f"ragpulse@{revision}" if revision else "ragpulse" if workers == 1 else f"ragpulse {workers}w"
        self.topic = topic
        self.http_endpoint = f"127.0.0.1:{free_port()}"
        config = {
            "bus": {"kind": "kafka", "kafka": {
                "bootstrap_servers": broker.bootstrap, "compression": compression, "records_topic": topic,
                "scores_topic": f"{topic}.scores", "dlq_topic": f"{topic}.dlq", "records_partitions": 4}},
            "prometheus": {"endpoint": f"127.0.0.1:{free_port()}"},
            "receiver": {"grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": self.http_endpoint,
                         "enable_grpc": False, **({"workers": workers} if workers > 1 else {})},
            "log_level": "warning",
        }
        path = tmp / f"ragpulse-{revision or workers}.yaml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        self.log = tmp / f"ragpulse-{revision or workers}.log"
        tree = checkout_revision(tmp, revision) if revision else None
        env = {**os.environ, "PYTHONPATH": str(tree)} if tree else None
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "ragpulse.cli", "collector", "--config", str(path)],
                                         stdout=out, stderr=subprocess.STDOUT, cwd=tree, env=env)
        wait_line(self.proc, self.log, "all ready in" if workers > 1 else "ready in", timeout_s=120)


def checkout_revision(tmp: Path, revision: str) -> Path:
    """The repository's files at `revision`, importable as the `ragpulse` package with this venv's
    dependencies: run from there with it on PYTHONPATH, it comes before the editable install of the
    working tree. The links stand in for pyproject.toml's package-dir mapping."""
    tree = tmp / f"rev-{revision}"
    tree.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    for package in ("collector", "scorer"):
        (tree / "ragpulse" / package).symlink_to(tree / package)
    return tree


def _wait_port(proc: subprocess.Popen, log: Path, endpoint: str, timeout_s: float = 60) -> None:
    import socket

    host, port = endpoint.rsplit(":", 1)
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"collector not ready: {log.read_text(errors='replace')[-3000:]}")
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)


# ---------------------------------------------------------------------------------------------
# Measuring


class Offsets:
    """End offsets of a topic, from one long-lived consumer (no connection per poll)."""

    def __init__(self, broker: KafkaBroker) -> None:
        from kafka import KafkaConsumer

        self._consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)

    def total(self, topic: str) -> int:
        from kafka import TopicPartition

        parts = [TopicPartition(topic, p) for p in self._consumer.partitions_for_topic(topic) or ()]
        return sum(self._consumer.end_offsets(parts).values()) if parts else 0

    def close(self) -> None:
        self._consumer.close()


def run_round(collector: Collector, offsets: Offsets, body_file: Path, spans: int, messages: int,
              connections: int) -> dict[str, float]:
    """One pass of the payload through one collector: spans/s and CPU ms per 1,000 spans."""
    target = offsets.total(collector.topic) + messages
    cpu_before = cpu_s(collector.proc.pid)
    client = subprocess.Popen([sys.executable, __file__, "otlp-client", collector.http_endpoint, str(body_file),
                               str(connections)], stdout=subprocess.PIPE, text=True)
    started = float(client.stdout.readline())
    deadline = time.monotonic() + 900
    while offsets.total(collector.topic) < target:
        if client.poll() not in (None, 0):
            raise RuntimeError(f"OTLP client failed against {collector.name}")
        if collector.proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"{collector.name}: messages missing; {collector.log.read_text()[-3000:]}")
        time.sleep(0.05)
    elapsed = time.time() - started
    cpu = cpu_s(collector.proc.pid) - cpu_before
    if client.wait(120) != 0:
        raise RuntimeError(f"OTLP client failed against {collector.name}")
    got = offsets.total(collector.topic) - (target - messages)
    if got != messages:
        raise RuntimeError(f"{collector.name}: {got} messages on {collector.topic}, expected {messages}")
    return {"spans_s": spans / elapsed, "cpu_ms_per_1k": cpu * 1000 / spans * 1000}


def otelcol_spans_on_topic(broker: KafkaBroker, topic: str) -> int:
    """Every otlp_proto message on the topic decoded, its spans counted."""
    from kafka import KafkaConsumer
    from opentelemetry.proto.trace.v1.trace_pb2 import TracesData

    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=10_000, max_partition_fetch_bytes=8 << 20)
    total = 0
    try:
        for message in consumer:
            data = TracesData.FromString(message.value)
            total += sum(len(ss.spans) for rs in data.resource_spans for ss in rs.scope_spans)
    finally:
        consumer.close()
    return total


def median(values: list[float]) -> float:
    return statistics.median(values)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=20_000, help="spans per collector per round (multiple of 100)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per payload")
    parser.add_argument("--payloads", default="rag,mixed", help="rag, mixed or both (comma-separated)")
    parser.add_argument("--workers", default="1", help="ragpulse collectors to run, by receiver.workers (e.g. 1,2)")
    parser.add_argument("--connections", type=int, default=2, help="the client's keep-alive connections")
    parser.add_argument("--baseline", metavar="REV",
                        help="also run ragpulse as of this git revision (one worker), for a before/after ratio")
    parser.add_argument("--compression", default="lz4")
    parser.add_argument("--write-results", action="store_true", help="append the section to bench/RESULTS.md")
    args = parser.parse_args()
    if not OTELCOL.exists():
        raise SystemExit(f"{OTELCOL} missing: run bench/build_otelcol.sh first")
    spans = args.spans - args.spans % TRACE_SPANS
    payloads = args.payloads.split(",")
    worker_counts = [int(w) for w in args.workers.split(",")]
    results: dict[tuple[str, str], list[dict[str, float]]] = {}
    sizes: dict[str, float] = {}

    with tempfile.TemporaryDirectory(prefix="ragpulse-peer-bench-") as tmp_name:
        tmp = Path(tmp_name)
        broker = KafkaBroker(tmp / "broker")
        broker.start()
        collectors: list[Collector] = []
        offsets = None
        try:
            otel_topic = "bench.otelcol.spans"
            broker.create_topic(otel_topic, partitions=4)
            collectors = [Otelcol(broker, tmp, otel_topic)]
            if args.baseline:
                collectors.append(Ragpulse(broker, tmp, "bench.ragpulse.baseline.records", args.compression, 1,
                                           args.baseline))
            for workers in worker_counts:
                collectors.append(Ragpulse(broker, tmp, f"bench.ragpulse{workers}.records", args.compression, workers))
            offsets = Offsets(broker)
            rag_spans_sent = 0
            otel_spans_sent = 0
            for seed, payload in enumerate(payloads, start=1):
                mixed = payload == "mixed"
                bodies = otlp_bodies(spans, mixed, seed)
                sizes[payload] = sum(map(len, bodies)) / spans
                body_file = tmp / f"{payload}.bin"
                write_bodies(body_file, bodies)
                rag = spans // TRACE_SPANS if mixed else spans
                # otelcol sends one message per trace; ragpulse one record per RAG span.
                messages = {c.name: rag if c.name != "otelcol" else (spans // TRACE_SPANS if mixed else spans)
                            for c in collectors}
                # Warm-up: 4 requests each (imports, connections, topic metadata), not measured.
                warm = tmp / f"{payload}.warm.bin"
                write_bodies(warm, bodies[:4])
                warm_spans = 4 * SPANS_PER_REQUEST
                warm_messages = warm_spans // TRACE_SPANS if mixed else warm_spans
                for c in collectors:
                    run_round(c, offsets, warm, warm_spans, warm_messages, args.connections)
                rag_spans_sent += warm_messages
                otel_spans_sent += warm_spans
                print(f"{payload}: {sizes[payload]:,.0f} bytes of OTLP protobuf per span, {spans} spans per round",
                      flush=True)
                for r in range(args.rounds):
                    order = collectors if r % 2 == 0 else collectors[::-1]
                    for c in order:
                        m = run_round(c, offsets, body_file, spans, messages[c.name], args.connections)
                        results.setdefault((payload, c.name), []).append(m)
                        print(f"  round {r + 1} {c.name:11s} {m['spans_s']:9,.0f} spans/s "
                              f"{m['cpu_ms_per_1k']:8.1f} CPU ms / 1,000 spans", flush=True)
                    rag_spans_sent += rag
                    otel_spans_sent += spans
            # Nothing lost: every span on the otelcol topic, one record per RAG span on ragpulse's.
            otel_spans = otelcol_spans_on_topic(broker, otel_topic)
            ragpulse_records = [offsets.total(c.topic) for c in collectors[1:]]
            print(f"otelcol topic: {otel_spans} spans (sent {otel_spans_sent}); "
                  f"ragpulse topics: {ragpulse_records} records (RAG spans sent {rag_spans_sent} to each)", flush=True)
            if otel_spans != otel_spans_sent or any(n != rag_spans_sent for n in ragpulse_records):
                raise SystemExit("messages lost or duplicated")
        finally:
            if offsets is not None:
                offsets.close()
            for c in collectors:
                c.stop()
            broker.stop()

    section = results_section(args, spans, payloads, collectors, results, sizes)
    print(section)
    if args.write_results:
        with open(REPO / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(section)


def results_section(args: argparse.Namespace, spans: int, payloads: list[str], collectors: list[Collector],
                    results: dict[tuple[str, str], list[dict[str, float]]], sizes: dict[str, float]) -> str:
    version = (kafka_home() / "VERSION").read_text().strip()
    names = [c.name for c in collectors]
    rows = []
    for payload in payloads:
        o = results[(payload, "otelcol")]
        for name in names:
            ms = results[(payload, name)]
            rows.append(f"| {payload} | {name} | {median([m['spans_s'] for m in ms]):,.0f} | "
                        f"{median([m['cpu_ms_per_1k'] for m in ms]):,.1f} | "
                        + ", ".join(f"{m['cpu_ms_per_1k']:.1f}" for m in ms) + " |")
        target = 2 if payload == "mixed" else 3
        for name in names[1:]:
            per_round = [b["cpu_ms_per_1k"] / a["cpu_ms_per_1k"] for a, b in zip(o, results[(payload, name)],
                                                                                    strict=True)]
            rows.append(f"| {payload} | **{name} / otelcol** (CPU) | | **{median(per_round):.2f}x** "
                        f"(target <= {target}x) | " + ", ".join(f"{x:.2f}x" for x in per_round) + " |")
        one = results.get((payload, "ragpulse"))
        baseline = results.get((payload, f"ragpulse@{args.baseline}"))
        if one is not None and baseline is not None:
            per_round = [b["cpu_ms_per_1k"] / a["cpu_ms_per_1k"] for a, b in zip(baseline, one, strict=True)]
            rows.append(f"| {payload} | **ragpulse / ragpulse@{args.baseline}** (CPU) | | "
                        f"**{median(per_round):.2f}x** | " + ", ".join(f"{x:.2f}x" for x in per_round) + " |")
        for name in [n for n in names[1:] if n.startswith("ragpulse ")] if one is not None else []:
            per_round = [b["spans_s"] / a["spans_s"] for a, b in zip(one, results[(payload, name)], strict=True)]
            rows.append(f"| {payload} | **{name} / ragpulse** (spans/s) | **{median(per_round):.2f}x** "
                        f"(target >= 1.7x) | | " + ", ".join(f"{x:.2f}x" for x in per_round) + " |")
    load = os.getloadavg()
    return f"""
## Collector cost per span vs the OpenTelemetry Collector

What: CPU per span of `ragpulse collector` and of the OpenTelemetry Collector (the peer, built by
`bench/build_otelcol.sh`: otlpreceiver and batchprocessor v0.165.0, kafkaexporter v0.165.1), both
OTLP/HTTP protobuf in → one Kafka broker out (Apache Kafka {version}, `deploy/kafka/broker.sh`),
same pre-encoded requests of 100 spans from a client process with {args.connections} keep-alive
connections, {spans:,} spans per collector per round, {args.rounds} rounds alternating the collectors
(order reversed every other round). otelcol: `otlp_proto`, acks all, {args.compression},
`partition_traces_by_id`, every span forwarded; ragpulse (receiver.workers {args.workers}): its Kafka
bus (acks all, idempotent, {args.compression}), default conventions, one record per RAG span. CPU
from /proc/<pid>/stat (utime + stime; a ragpulse parent's and its workers' together) from the
first request until every message is on the topic. Payloads: RAG spans
({sizes.get("rag", 0):,.0f} bytes of OTLP per span), mixed traces of 20 spans, 1 RAG + 19 HTTP/DB
spans with 10 attributes ({sizes.get("mixed", 0):,.0f} bytes per span). Nothing lost: the otelcol
topic read back and its spans counted, each ragpulse topic holds one record per RAG span.

Command ({time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}, {os.cpu_count()} cores, {cpu_model()};
load average {load[0]:.1f} at the end from other jobs on the machine, so absolute figures are low
and noisy; the ratios, measured alternately, are the result):

    bash bench/build_otelcol.sh
    RAGPULSE_KAFKA_HOME=~/.cache/ragpulse/kafka .venv/bin/python bench/peer_collector.py \\
        --spans {spans} --rounds {args.rounds} --payloads {args.payloads} --workers {args.workers} \\
        --connections {args.connections}{f" --baseline {args.baseline}" if args.baseline else ""} --write-results

| payload | collector | spans/s (median) | CPU ms / 1,000 spans (median) | per round |
| --- | --- | ---: | ---: | --- |
""" + "\n".join(rows) + "\n"


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "otlp-client":
        otlp_client(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    else:
        main()

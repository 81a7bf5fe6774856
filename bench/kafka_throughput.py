"""Kafka throughput: collector (OTLP in → ragpulse.records) and scorer groups of 1 and 2 processes.

    python bench/kafka_throughput.py [--spans 40000] [--scorer-records 10000] [--local-records 1500]
                                     [--write-results]

Starts its own broker with deploy/kafka/broker.sh (jars from deploy/kafka/fetch.sh) on a free
port, so nothing else must run. Measured in one run, on whatever cores the machine has (the broker,
the load generator and the measured processes share them):

1. bare producer: the collector's librdkafka producer with its settings (acks=all, idempotent,
   --compression, the trace-id partition) sending the same record JSON the collector would
   produce — the ceiling;
2. collector: a `ragpulse collector` process, OTLP/HTTP protobuf requests of 100 spans (~3 KB of
   RAG text per span, 100% sampling) from a client process with pre-encoded bodies; records/s
   from the first request until the broker's end offsets hold every record;
3. scorer group: 1 and 2 scorer processes, the records written once the group is stable (this
   script's `scorer-worker` mode, the same KafkaScorer as `ragpulse scorer`) with a no-op judge (the
   scorer's own overhead: Kafka, worker, metric code, Prometheus, scores topic) and with the
   local judge; records/s from the moment every process has scored a record to the last scored
   record, from /metrics.

Targets (issue "Kafka scale-out"): collector >= 10,000 spans/s and >= 60% of the bare producer;
no-op judge >= 2,000 records/s per process; 2 processes >= 1.7x of 1 when the judge is the
bottleneck (local judge).
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
from kafka_broker import KafkaBroker, free_port, kafka_home  # noqa: E402

from ragpulse.scorer.judge.base import GeneratedQuestions, RecordText, Usage  # noqa: E402

SPANS_PER_REQUEST = 100

QUESTION = "What is the population of Tokyo, and how has it changed over the last decade? 東京の人口は？ "
CONTEXT = ("Tokyo, officially the Tokyo Metropolis, is the capital of Japan and one of the most populous "
           "urban areas in the world. The metropolis had an estimated population of about 14 million "
           "residents, while the Greater Tokyo Area is home to roughly 37 million people. 東京都の人口は"
           "約1400万人で、日本の都道府県で最も多い。Population growth slowed in recent years. ")
ANSWER = "Tokyo has about 14 million residents; growth has slowed in the last decade. 約1400万人です。"


class NoopJudge:
    """Answers every primitive question at once with a constant: what remains is the scorer's own
    cost (Kafka, worker, metric code, Prometheus, scores topic)."""

    name = "noop"
    model = "none"

    def statements(self, rec: RecordText, usage: Usage) -> list[str]:
        return [rec.answer]

    def verify(self, rec: RecordText, statements: list[str], usage: Usage) -> list[float]:
        return [1.0] * len(statements)

    def questions(self, rec: RecordText, n: int, usage: Usage) -> GeneratedQuestions:
        return GeneratedQuestions([rec.question] * n, False)

    def relevant_sentences(self, rec: RecordText, sentences: list[str], usage: Usage) -> list[float]:
        return [1.0] * len(sentences)

    def embed(self, texts: list[str], usage: Usage) -> np.ndarray:
        return np.ones((len(texts), 4)) / 2.0


def span_texts(i: int) -> tuple[str, list[str], str]:
    contexts = [f"[{i}:{k}] " + CONTEXT * 2 for k in range(3)]
    return f"{QUESTION}({i})", contexts, f"{ANSWER} ({i})"


def otlp_bodies(spans: int) -> list[bytes]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue, KeyValue

    def kv(key: str, value: str | list[str]) -> KeyValue:
        if isinstance(value, list):
            return KeyValue(key=key, value=AnyValue(array_value=ArrayValue(
                values=[AnyValue(string_value=v) for v in value])))
        return KeyValue(key=key, value=AnyValue(string_value=value))

    bodies = []
    for start in range(0, spans, SPANS_PER_REQUEST):
        request = ExportTraceServiceRequest()
        rs = request.resource_spans.add()
        rs.resource.attributes.append(kv("service.name", "bench"))
        ss = rs.scope_spans.add()
        for i in range(start, min(spans, start + SPANS_PER_REQUEST)):
            question, contexts, answer = span_texts(i)
            span = ss.spans.add(trace_id=(i + 1).to_bytes(16, "big"), span_id=(i + 1).to_bytes(8, "big"),
                                name="rag", start_time_unix_nano=1, end_time_unix_nano=2)
            span.attributes.extend([kv("rag.question", question), kv("rag.contexts", contexts),
                                    kv("rag.answer", answer)])
        bodies.append(request.SerializeToString())
    return bodies


def record_values(count: int) -> list[tuple[bytes, bytes]]:
    from ragpulse.core.wire import Record, Sampling

    out = []
    for i in range(count):
        question, contexts, answer = span_texts(i)
        r = Record(trace_id=f"{i + 1:032x}", span_id=f"{i + 1:016x}", service="bench", question=question,
                   contexts=contexts, answer=answer, time_unix_nano=2, sampling=Sampling(1.0, 1.0, "default"))
        out.append((r.trace_id.encode(), r.to_json()))
    return out


COMPRESSION = {"value": "lz4"}  # set from --compression in main()


def kafka_settings(broker: KafkaBroker, suffix: str, partitions: int = 4) -> dict[str, Any]:
    return {"bootstrap_servers": broker.bootstrap, "compression": COMPRESSION["value"],
            "records_topic": f"bench.records.{suffix}",
            "scores_topic": f"bench.scores.{suffix}", "dlq_topic": f"bench.dlq.{suffix}",
            "group_id": f"bench-scorer.{suffix}", "records_partitions": partitions, "session_timeout_ms": 10000}


def end_offsets_total(broker: KafkaBroker, topic: str) -> int:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(partitions).values())
    finally:
        consumer.close()


def bench_bare_producer(broker: KafkaBroker, values: list[tuple[bytes, bytes]]) -> float:
    from confluent_kafka import Producer

    from ragpulse.collector.kafka_publisher import producer_config
    from ragpulse.kafka.config import KafkaConfig
    from ragpulse.kafka.producer import TraceIdPartitioner
    from ragpulse.kafka.topics import ensure_topics, ragpulse_topics

    kafka = dataclasses.replace(KafkaConfig(), **kafka_settings(broker, "bare"))
    ensure_topics(kafka, ragpulse_topics(kafka))
    topic = kafka.records_topic
    producer = Producer(producer_config(kafka))
    partitions = set(producer.list_topics(topic, timeout=30).topics[topic].partitions)
    choose = TraceIdPartitioner().choose
    started = time.perf_counter()
    for key, value in values:
        while True:
            try:
                producer.produce(topic, value, key, choose(topic, partitions, key))
                break
            except BufferError:  # the collector would answer "retry later"; a bare producer waits
                producer.poll(0.01)
    producer.flush()
    elapsed = time.perf_counter() - started
    producer.close()
    assert end_offsets_total(broker, topic) == len(values)
    return len(values) / elapsed


def bench_consumer_only(broker: KafkaBroker, values: list[tuple[bytes, bytes]]) -> float:
    """KafkaRecordConsumer alone (poll, mark finished, commit): the Kafka share of a scorer."""
    from kafka import KafkaProducer
    from prometheus_client import CollectorRegistry

    from ragpulse.kafka.config import KafkaConfig
    from ragpulse.scorer.consume.kafka import KafkaConsumerMetrics, KafkaRecordConsumer

    kafka = dataclasses.replace(KafkaConfig(), **kafka_settings(broker, "consumer"))
    broker.create_topic(kafka.records_topic, partitions=kafka.records_partitions)
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, batch_size=512 * 1024)
    for key, value in values:
        producer.send(kafka.records_topic, key=key, value=value)
    producer.flush()
    producer.close()
    consumer = KafkaRecordConsumer(kafka, KafkaConsumerMetrics(CollectorRegistry()))
    done, started = 0, None
    while done < len(values):
        deliveries = consumer.poll(max_records=4, timeout_s=0.5)  # as a worker with concurrency 4
        if deliveries and started is None:
            started = time.perf_counter()
        for d in deliveries:
            consumer.commit(d)
        done += len(deliveries)
        consumer.depth()
    elapsed = time.perf_counter() - started
    consumer.close()
    return len(values) / elapsed


def write_config(tmp: Path, name: str, kafka: dict[str, Any], **extra: Any) -> tuple[Path, str]:
    metrics = f"127.0.0.1:{free_port()}"
    config = {"bus": {"kind": "kafka", "kafka": kafka}, "prometheus": {"endpoint": metrics},
              "receiver": {"grpc_endpoint": f"127.0.0.1:{free_port()}",
                           "http_endpoint": f"127.0.0.1:{free_port()}"}, **extra}
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path, metrics


def wait_line(proc: subprocess.Popen, log: Path, text: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in log.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"process not ready: {log.read_text(errors='replace')[-3000:]}")
        time.sleep(0.1)


def bench_collector(broker: KafkaBroker, tmp: Path, bodies: list[bytes], spans: int) -> float:
    kafka = kafka_settings(broker, "collector")
    config, _ = write_config(tmp, "collector", kafka, receiver={
        "grpc_endpoint": f"127.0.0.1:{free_port()}", "http_endpoint": f"127.0.0.1:{free_port()}",
        "enable_grpc": False})
    http_endpoint = yaml.safe_load(config.read_text())["receiver"]["http_endpoint"]
    log = tmp / "collector.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "ragpulse.cli", "collector", "--config", str(config)],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_line(proc, log, "ready in")
        body_file = tmp / "bodies.json"
        body_file.write_text(json.dumps([b.hex() for b in bodies]))
        client = subprocess.Popen([sys.executable, __file__, "otlp-client", http_endpoint, str(body_file)],
                                  stdout=subprocess.PIPE, text=True)
        # The client prints the moment it sent its first request (perf_counter is per process:
        # use the wall clock, one machine).
        started = float(client.stdout.readline())
        while end_offsets_total(broker, kafka["records_topic"]) < spans:
            if client.poll() not in (None, 0):
                raise RuntimeError("OTLP client failed")
            time.sleep(0.05)
        elapsed = time.time() - started
        client.wait(60)
        return spans / elapsed
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


def otlp_client(endpoint: str, body_file: str) -> None:
    """Sends pre-encoded OTLP/HTTP bodies over two keep-alive connections (threads), retrying 503."""
    import threading

    bodies = [bytes.fromhex(h) for h in json.loads(Path(body_file).read_text())]
    host, port = endpoint.rsplit(":", 1)
    print(time.time(), flush=True)

    def run(part: list[bytes]) -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        for body in part:
            while True:
                conn.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
                response = conn.getresponse()
                response.read()
                if response.status == 200:
                    break
                if response.status != 503:
                    raise RuntimeError(f"collector answered {response.status}")
                time.sleep(float(response.getheader("Retry-After", "1")))

    threads = [threading.Thread(target=run, args=(bodies[k::2],)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def scored_counts(endpoints: list[str]) -> list[float]:
    from prometheus_client.parser import text_string_to_metric_families

    counts = []
    for endpoint in endpoints:
        with urllib.request.urlopen(f"http://{endpoint}/metrics", timeout=5) as r:
            text = r.read().decode()
        counts.append(sum(s.value for family in text_string_to_metric_families(text)
                          for s in family.samples if s.name == "ragpulse_records_scored_total"))
    return counts


def bench_scorers(broker: KafkaBroker, tmp: Path, values: list[tuple[bytes, bytes]], judge: str,
                  processes: int, concurrency: int) -> float:
    from kafka import KafkaProducer

    suffix = f"{judge}{processes}c{concurrency}"
    kafka = kafka_settings(broker, suffix)
    broker.create_topic(kafka["records_topic"], partitions=kafka["records_partitions"])

    procs, endpoints = [], []
    try:
        # One BLAS thread per process: the processes, not numpy, share out the cores.
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
        for k in range(processes):
            config, metrics = write_config(tmp, f"scorer-{suffix}-{k}", kafka,
                                           scorer={"concurrency": concurrency}, log_level="warning")
            log = tmp / f"scorer-{suffix}-{k}.log"
            with open(log, "w") as out:
                procs.append((subprocess.Popen([sys.executable, __file__, "scorer-worker", str(config), judge],
                                               stdout=out, stderr=subprocess.STDOUT, env=env), log))
            endpoints.append(metrics)
        for proc, log in procs:
            wait_line(proc, log, "ready")
        # Records go in once the group has settled with every member, so no member drains the
        # topic alone while the others are still joining.
        wait_group_stable(broker, kafka["group_id"], processes)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=5, batch_size=512 * 1024)
        for key, value in values:
            producer.send(kafka["records_topic"], key=key, value=value)
        producer.flush()
        producer.close()
        # The rate counts from the moment every process has scored a record to the last record.
        first_at, first_count = None, 0.0
        while True:
            counts = scored_counts(endpoints)
            count, now = sum(counts), time.monotonic()
            if first_at is None and min(counts) > 0:
                first_at, first_count = now, count
            if count >= len(values):
                if first_at is None or count - first_count < len(values) / 2:
                    logs = "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for _, log in procs)
                    raise RuntimeError(f"the group settled too late to measure ({counts}); use more "
                                       f"records. Scorer logs:\n{logs}")
                return (count - first_count) / (now - first_at)
            time.sleep(0.25)
    finally:
        for proc, _ in procs:
            proc.send_signal(signal.SIGTERM)
        for proc, _ in procs:
            proc.wait(60)


def wait_group_stable(broker: KafkaBroker, group: str, members: int, timeout_s: float = 90.0) -> None:
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                described = admin.describe_groups([group]).get(group, {})
            except KafkaError:  # the coordinator is still loading on a fresh broker
                described = {}
            state = described.get("group_state") or described.get("state")
            if state == "Stable" and len(described.get("members") or []) == members:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(f"group {group} not stable with {members} members: {described}")
            time.sleep(0.2)
    finally:
        admin.close()


def scorer_worker(config_path: str, judge_name: str) -> None:
    """One scorer-group member, as `ragpulse scorer` but with the judge chosen here."""
    from ragpulse.cli import wait_for_stop_signal
    from ragpulse.config import load_config
    from ragpulse.kafka_mode import KafkaScorer

    config = load_config(config_path)
    scorer = KafkaScorer(config, judge=NoopJudge() if judge_name == "noop" else None)
    scorer.start()
    print("ready", flush=True)
    wait_for_stop_signal()
    scorer.stop()


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spans", type=int, default=40_000, help="spans for the collector benchmark")
    parser.add_argument("--scorer-records", type=int, default=10_000, help="records for the no-op judge runs")
    parser.add_argument("--local-records", type=int, default=1_500, help="records for the local judge runs")
    parser.add_argument("--concurrency", type=int, default=4, help="scorer.concurrency, no-op judge runs")
    parser.add_argument("--local-concurrency", type=int, default=1, help="scorer.concurrency, local judge runs")
    parser.add_argument("--compression", default="lz4", help="bus.kafka.compression (lz4 needs the lz4 package)")
    parser.add_argument("--write-results", action="store_true", help="append the section to bench/RESULTS.md")
    args = parser.parse_args()
    COMPRESSION["value"] = args.compression

    with tempfile.TemporaryDirectory(prefix="ragpulse-kafka-bench-") as tmp_name:
        tmp = Path(tmp_name)
        broker = KafkaBroker(tmp / "broker")
        broker.start()
        try:
            values = record_values(max(args.spans, args.scorer_records))
            print(f"record size: {len(values[0][1])} bytes of JSON", flush=True)
            bare = bench_bare_producer(broker, values[: args.spans])
            print(f"bare producer: {bare:,.0f} records/s", flush=True)
            collector = bench_collector(broker, tmp, otlp_bodies(args.spans), args.spans)
            print(f"collector: {collector:,.0f} spans/s ({collector / bare:.0%} of bare)", flush=True)
            consumer_only = bench_consumer_only(broker, values[: args.scorer_records])
            print(f"consumer alone: {consumer_only:,.0f} records/s", flush=True)
            scorer: dict[tuple[str, int], float] = {}
            for judge, count, concurrency in (("noop", args.scorer_records, args.concurrency),
                                              ("local", args.local_records, args.local_concurrency)):
                for processes in (1, 2):
                    rate = bench_scorers(broker, tmp, values[:count], judge, processes, concurrency)
                    scorer[(judge, processes)] = rate
                    print(f"scorer {judge} x{processes}: {rate:,.0f} records/s", flush=True)
        finally:
            broker.stop()

    version = (kafka_home() / "VERSION").read_text().strip()
    ratio = collector / bare
    noop_x = scorer[("noop", 2)] / scorer[("noop", 1)]
    local_x = scorer[("local", 2)] / scorer[("local", 1)]
    section = f"""
## Kafka throughput

What: records/s from OTLP in to the records topic (collector), and through a scorer group of 1 and
2 processes with a no-op judge (the scorer's own overhead) and with the local judge. One broker
(Apache Kafka {version}, KRaft, started by `deploy/kafka/broker.sh`, 512 MB heap), the load
generator and the measured processes all share this machine's cores. Record: ~{len(values[0][1]):,} bytes
of JSON (~3 KB of RAG text), 100% sampling, producer acks=all, idempotent, `{args.compression}`
compression; 4 partitions; scorers with `scorer.concurrency: {args.concurrency}` (no-op judge) and
`{args.local_concurrency}` (local judge), one BLAS thread per process.

Command ({time.strftime("%Y-%m-%d")}, {os.cpu_count()} cores, {cpu_model()}):

    .venv/bin/python bench/kafka_throughput.py --spans {args.spans} --scorer-records {args.scorer_records} \\
        --local-records {args.local_records} --concurrency {args.concurrency} \\
        --local-concurrency {args.local_concurrency} --compression {args.compression} --write-results

| measurement | records/s | target |
| --- | ---: | --- |
| bare producer (the collector's librdkafka producer, same records, same settings) | {bare:,.0f} | (reference) |
| collector: OTLP/HTTP protobuf in → records topic | {collector:,.0f} | >= 10,000; >= 60% of bare: **{ratio:.0%}** |
| scorer's Kafka consumer alone (poll, finish, commit) | {consumer_only:,.0f} | (reference) |
| scorer, no-op judge, 1 process | {scorer[("noop", 1)]:,.0f} | >= 2,000 per process |
| scorer, no-op judge, 2 processes | {scorer[("noop", 2)]:,.0f} | ({noop_x:.2f}x of 1) |
| scorer, local judge, 1 process | {scorer[("local", 1)]:,.1f} | |
| scorer, local judge, 2 processes | {scorer[("local", 2)]:,.1f} | >= 1.7x of 1: **{local_x:.2f}x** |
"""
    print(section)
    if args.write_results:
        with open(REPO / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write(section)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "otlp-client":
        otlp_client(sys.argv[2], sys.argv[3])
    elif len(sys.argv) > 1 and sys.argv[1] == "scorer-worker":
        scorer_worker(sys.argv[2], sys.argv[3])
    else:
        main()

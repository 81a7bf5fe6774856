"""ragpulse's own CPU cost per record, without any bus: the collector pipeline (OTLP protobuf
decode → extract → sample → Record JSON) and the scorer worker with a no-op judge (parse →
metrics over a judge that answers instantly → Prometheus export → observers).

    python bench/pipeline_overhead.py [--spans 20000] [--records 3000] [--repeat 3]

Prints the median records/s of --repeat passes, measured in one run. The Kafka benchmark
(bench/kafka_throughput.py) adds the broker on top of these.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kafka_throughput import NoopJudge, otlp_bodies, record_values  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from ragpulse.app import build_scorer  # noqa: E402
from ragpulse.collector.otlp_decode import PROTOBUF, decode_request  # noqa: E402
from ragpulse.collector.pipeline import CollectorPipeline  # noqa: E402
from ragpulse.collector.telemetry import CollectorMetrics  # noqa: E402
from ragpulse.config import Config  # noqa: E402
from ragpulse.core.bus import Delivery, InProcessBus  # noqa: E402


def collector_pass(bodies: list[bytes], spans: int) -> float:
    bus = InProcessBus(spans + 1)
    config = Config()
    pipeline = CollectorPipeline(
        config.extract, config.sampling, config.redaction, bus, CollectorMetrics(CollectorRegistry())
    )
    started = time.perf_counter()
    for body in bodies:
        pipeline.consume_export_request(decode_request(body, PROTOBUF), "http")
    return spans / (time.perf_counter() - started)


def scorer_pass(values: list[tuple[bytes, bytes]]) -> float:
    parts = build_scorer(Config(), InProcessBus(1), CollectorRegistry(), NoopJudge())
    started = time.perf_counter()
    for key, value in values:
        parts.worker.handle(Delivery(key, value))
    return len(values) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--records", type=int, default=3_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bodies = otlp_bodies(args.spans)
    values = record_values(args.records)
    collector = statistics.median(collector_pass(bodies, args.spans) for _ in range(args.repeat))
    scorer = statistics.median(scorer_pass(values) for _ in range(args.repeat))
    print(f"collector pipeline (decode → record JSON, in-process bus): {collector:8.0f} spans/s")
    print(f"scorer worker (no-op judge, all three metrics, export):      {scorer:8.0f} records/s")


if __name__ == "__main__":
    main()

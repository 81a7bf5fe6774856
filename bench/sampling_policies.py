"""What the tail-sampling policies cost the collector per span: the pipeline (OTLP protobuf decode →
extract → sample → record JSON onto the in-process bus) with no policies, and with the seven
policies of docs/sampling.md's worked example, alternating rounds in one run.

    python bench/sampling_policies.py [--spans 20000] [--rounds 5]

The benchmark's records (service "bench", no route, feedback or prompt version) meet none of the
example's conditions, so each one is tested against all seven before falling through to
default_probability, kept at 1.0 in both configs: the same records are built and published, and the
difference is the evaluation alone (its worst case). Prints spans per CPU second per round and the
median ratio, then the sampler's decision alone (CPU microseconds per record, same alternation).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kafka_throughput import otlp_bodies  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from ragpulse.collector.otlp_decode import PROTOBUF, decode_request  # noqa: E402
from ragpulse.collector.pipeline import CollectorPipeline  # noqa: E402
from ragpulse.collector.policies import PolicyConfig, Subject  # noqa: E402
from ragpulse.collector.sampling import ConsistentSampler, SamplingConfig  # noqa: E402
from ragpulse.collector.telemetry import CollectorMetrics  # noqa: E402
from ragpulse.config import Config  # noqa: E402
from ragpulse.core.bus import InProcessBus  # noqa: E402

DOCS = Path(__file__).resolve().parents[1] / "docs" / "sampling.md"


def example_policies() -> list[PolicyConfig]:
    text = DOCS.read_text(encoding="utf-8").split("```yaml\n", 1)[1].split("```", 1)[0]
    return [PolicyConfig(**p) for p in yaml.safe_load(text)["sampling"]["policies"]]


def collector_pass(bodies: list[bytes], spans: int, sampling: SamplingConfig) -> float:
    bus = InProcessBus(spans + 1)
    config = Config(sampling=sampling)
    pipeline = CollectorPipeline(
        config.extract, config.sampling, config.redaction, bus, CollectorMetrics(CollectorRegistry())
    )
    # CPU time of this process (the pipeline runs on this thread): less swayed than wall time by
    # whatever else the machine runs.
    started = time.process_time()
    for body in bodies:
        pipeline.consume_export_request(decode_request(body, PROTOBUF), "http")
    elapsed = time.process_time() - started
    assert len(bus.poll(spans + 1, 0.0)) == spans, "every record must be kept in both configs"
    return spans / elapsed


def decision_us(sampling: SamplingConfig, trace_ids: list[bytes]) -> float:
    sampler = ConsistentSampler(sampling)
    subject = Subject("bench", attributes={})
    started = time.process_time()
    for trace_id in trace_ids:
        sampler.decide(trace_id, subject)
    return (time.process_time() - started) / len(trace_ids) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    bodies = otlp_bodies(args.spans)
    configs = {"no policies": SamplingConfig(), "7 policies": SamplingConfig(policies=example_policies())}
    ratios = []
    for i in range(args.rounds):
        order = list(configs) if i % 2 == 0 else list(reversed(configs))
        rates = {name: collector_pass(bodies, args.spans, configs[name]) for name in order}
        ratios.append(rates["7 policies"] / rates["no policies"])
        print(f"round {i + 1}: " + ", ".join(f"{name} {rates[name]:,.0f} spans/CPU s" for name in configs))
    print(f"median ratio (7 policies / no policies): {statistics.median(ratios):.3f}")
    trace_ids = [i.to_bytes(16, "big") for i in range(1, 100_001)]
    costs: dict[str, list[float]] = {name: [] for name in configs}
    for i in range(args.rounds):
        for name in list(configs) if i % 2 == 0 else list(reversed(configs)):
            costs[name].append(decision_us(configs[name], trace_ids))
    print("decision alone, median CPU us per record: "
          + ", ".join(f"{name} {statistics.median(c):.2f}" for name, c in costs.items()))


if __name__ == "__main__":
    main()

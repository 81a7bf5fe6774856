"""One scorer process with the openai judge against a slow LLM: records/s and memory per record in
flight at several openai.max_concurrency, on the in-process bus and on Kafka, with the adaptive
concurrency limit (the default) and with today's fixed one.

    python bench/scorer_llm_concurrency.py [--latency 1.5] [--max-concurrency 1 16 64] [--seconds 30]
                                           [--buses memory kafka] [--rounds 1] [--concurrency N]
                                           [--limits adaptive fixed] [--slots N] [--fixed-timeout 60]
                                           [--write-results]

Limits: `adaptive` runs the judge's defaults at each max_concurrency (openai.adaptive_concurrency on,
timeout_s its default ceiling); `fixed` turns adaptive_concurrency off with timeout_s
--fixed-timeout (60: the defaults before the adaptive limit). --slots makes the server answer that
many requests at once and queue the others, as a llama.cpp or Ollama server does; its counters say
how many requests were abandoned by the client in its queue or while being answered.

The judge is the test suite's fault-injecting OpenAI-compatible server (tests/support/), every reply
held back --latency seconds. The scorer is the real CLI: `ragpulse up` (in-process bus, records sent
as OTLP/HTTP spans) and `ragpulse scorer` on a broker started here (deploy/kafka/broker.sh, jars in
RAGPULSE_KAFKA_HOME), scorer.concurrency unset (derived from max_concurrency), default metrics.

Arithmetic first: at most max_concurrency requests are in flight and each takes --latency, so one
process can do at most max_concurrency / latency calls/s, and max_concurrency / latency / calls per
record records/s (the ceiling). Each run is sized to last about --seconds at the ceiling; records/s
is the slope of records scored over time from 15 to 85 % of the run (the start and the tail are
ramps). Records in flight = consumed - scored - skipped - dead-lettered (the worker's counters);
memory per record in flight = the RSS difference between max_concurrency 1 and the largest one over
the difference in records in flight (medians over the steady part of each run).

Exactly-once checks (exit 1 when one fails): records scored == records fed, by the scorer's
counters and by the scores sink (the live page's kept scores messages in memory; the scores topic
on Kafka, and every records-topic offset committed); no duplicate skipped, nothing dead-lettered;
the server saw calls per record x records requests, never more than max_concurrency at once.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "support"))
sys.path.insert(0, str(REPO / "bench"))
import kafka_throughput  # noqa: E402
from fault_injecting_openai_server import FaultInjectingOpenAIServer  # noqa: E402
from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka_broker import KafkaBroker  # noqa: E402
from kafka_throughput import cpu_model, kafka_settings, otlp_bodies, record_values  # noqa: E402
from overload import rss_mb  # noqa: E402
from ragpulse_process import RagpulseProcess  # noqa: E402

from ragpulse.kafka.config import KafkaConfig  # noqa: E402
from ragpulse.kafka.topics import ensure_topics, ragpulse_topics  # noqa: E402

# The default metrics with the openai judge: one call reads the answer (claims for faithfulness,
# questions for answer relevancy), one checks the claims against the contexts, one picks the
# context sentences the question needs. Answer relevancy embeds with the offline model.
NOMINAL_CALLS_PER_RECORD = 3
# The live page's /api/records returns at most this many records: the in-process bus's scores sink
# can be checked record by record up to it.
PAGE_LIMIT = 500
KAFKA_PARTITIONS = 4
# Issue #14, item 5: records/s per process (asked at max_concurrency 64, 1.5 s per reply).
TARGET_RATE = 20.0


@dataclass
class Run:
    bus: str
    max_concurrency: int
    limit: str
    records: int
    rate: float
    ceiling: float
    calls_per_record: float
    max_requests_in_flight: int
    records_in_flight: float
    idle_rss_mb: float
    rss_mb: float
    peak_rss_mb: float
    seconds: float
    abandoned_queued: int
    abandoned_started: int
    problems: list[str]


def served(max_concurrency: int, slots: int | None) -> int:
    """Requests the server answers at once: its slots, or max_concurrency where fewer."""
    return min(max_concurrency, slots or max_concurrency)


def records_for(max_concurrency: int, args: argparse.Namespace) -> int:
    ceiling = served(max_concurrency, args.slots) / args.latency / NOMINAL_CALLS_PER_RECORD
    return min(PAGE_LIMIT, max(10, round(ceiling * args.seconds)))


def counters(proc: RagpulseProcess) -> dict[str, float]:
    wanted = ("ragpulse_scorer_records_consumed_total", "ragpulse_records_scored_total",
              "ragpulse_scorer_records_skipped_total", "ragpulse_records_dead_lettered_total")
    out = dict.fromkeys(wanted, 0.0)
    for (name, labels), value in proc.samples().items():
        if name in out:
            out[name] += value
        if name == "ragpulse_scorer_records_skipped_total" and ("reason", "duplicate") in labels:
            out["duplicates"] = out.get("duplicates", 0.0) + value
    return out


def in_flight(c: dict[str, float]) -> float:
    return (c["ragpulse_scorer_records_consumed_total"] - c["ragpulse_records_scored_total"]
            - c["ragpulse_scorer_records_skipped_total"] - c["ragpulse_records_dead_lettered_total"])


def send_spans(endpoint: str, n: int, tmp: Path) -> None:
    """OTLP/HTTP requests of 100 spans, by kafka_throughput.py's client (retries 503)."""
    body_file = tmp / "bodies.json"
    body_file.write_text(json.dumps([b.hex() for b in otlp_bodies(n)]))
    subprocess.run([sys.executable, kafka_throughput.__file__, "otlp-client", endpoint, str(body_file)],
                   stdout=subprocess.DEVNULL, check=True, timeout=600)


def page_record_ids(proc: RagpulseProcess) -> list[str]:
    with urllib.request.urlopen(f"http://{proc.metrics}/api/records?limit={PAGE_LIMIT}", timeout=10) as r:
        answer = json.loads(r.read())
    return [rec["record_id"] for rec in answer["records"]]


def kafka_checks(broker: KafkaBroker, cfg: KafkaConfig, fed: list[str]) -> list[str]:
    """The scores topic holds every record once; every records-topic offset is committed."""
    ids = [json.loads(m.value)["record_id"] for m in broker.read(cfg.scores_topic, 10**9, timeout_s=2)]
    consumer = KafkaConsumer(bootstrap_servers=cfg.bootstrap_servers, group_id=cfg.group_id,
                             enable_auto_commit=False)
    try:
        ends = consumer.end_offsets([TopicPartition(cfg.records_topic, p) for p in range(KAFKA_PARTITIONS)])
        uncommitted = {tp.partition: end - (consumer.committed(tp) or 0) for tp, end in ends.items()}
    finally:
        consumer.close()
    problems = []
    if sorted(ids) != sorted(fed):
        problems.append(f"scores topic: {len(ids)} messages, {len(set(ids))} distinct, {len(fed)} fed")
    if any(uncommitted.values()):
        problems.append(f"records not committed, by partition: {uncommitted}")
    return problems


def run_once(bus: str, max_concurrency: int, limit: str, args: argparse.Namespace,
             server: FaultInjectingOpenAIServer, broker: KafkaBroker | None, tmp: Path, tag: str) -> Run:
    n = records_for(max_concurrency, args)
    openai: dict[str, Any] = {"model": "bench", "base_url": server.base_url, "api_key": "unused",
                              "max_concurrency": max_concurrency}
    if limit == "fixed":
        openai |= {"adaptive_concurrency": False, "timeout_s": args.fixed_timeout}
    values = record_values(n)
    fed = [f"{i + 1:032x}-{i + 1:016x}" for i in range(n)]
    settings: dict[str, Any] = {
        "scorer": {"judge": "openai", "recent_scores": PAGE_LIMIT, "concurrency": args.concurrency,
                   "openai": openai},
        "log_level": "warning",
    }
    cfg = None
    if bus == "kafka":
        assert broker is not None
        kafka = {**kafka_settings(broker, tag, KAFKA_PARTITIONS), "compression": "none"}
        settings["bus"] = {"kind": "kafka", "kafka": kafka}
        cfg = KafkaConfig(**kafka)
        ensure_topics(cfg, ragpulse_topics(cfg))
    else:
        settings["bus"] = {"memory": {"capacity": n + 100}}
    server.requests.clear()
    server.max_in_flight = server.abandoned_queued = server.abandoned_started = 0
    ideal = served(max_concurrency, args.slots) / args.latency / NOMINAL_CALLS_PER_RECORD
    proc = RagpulseProcess(tmp, settings, command="up" if bus == "memory" else "scorer")
    samples: list[tuple[float, float, float, float]] = []  # (t, scored, in flight, RSS MB)
    try:
        time.sleep(1.0)
        idle = rss_mb(proc.proc.pid)
        started = time.monotonic()
        if cfg is not None:
            producer = KafkaProducer(bootstrap_servers=cfg.bootstrap_servers)
            for key, value in values:
                producer.send(cfg.records_topic, key=key, value=value)
            producer.flush()
            producer.close()
        else:
            send_spans(proc.http, n, tmp)
        deadline = started + n / ideal * 5 + 120
        while True:
            c = counters(proc)
            samples.append((time.monotonic() - started, c["ragpulse_records_scored_total"], in_flight(c),
                            rss_mb(proc.proc.pid)))
            if samples[-1][1] >= n or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        time.sleep(2.0)  # a record scored twice would show now
        c = counters(proc)
        peak = rss_mb(proc.proc.pid, "VmHWM")
        problems = []
        if c["ragpulse_records_scored_total"] != n or c["ragpulse_scorer_records_consumed_total"] != n:
            problems.append(f"scored {c['ragpulse_records_scored_total']:.0f}, consumed "
                            f"{c['ragpulse_scorer_records_consumed_total']:.0f} of {n} fed")
        if c.get("duplicates") or c["ragpulse_records_dead_lettered_total"]:
            problems.append(f"duplicates {c.get('duplicates', 0):.0f}, dead-lettered "
                            f"{c['ragpulse_records_dead_lettered_total']:.0f}")
        if bus == "memory" and sorted(page_record_ids(proc)) != sorted(fed):
            problems.append("the live page's scores messages are not the records fed, once each")
    finally:
        proc.stop()
    if cfg is not None and broker is not None:
        problems += kafka_checks(broker, cfg, fed)
    chats = sum(1 for r in server.requests if r["path"].endswith("/chat/completions"))
    if server.max_in_flight > max_concurrency:
        problems.append(f"{server.max_in_flight} requests in flight, max_concurrency {max_concurrency}")
    calls = chats / n
    # The steady part: from 15 to 85 % of the run, after the first records' latency and before
    # the tail; the slope of records scored over time there, since records that started together
    # finish together and a rate between two crossing points would count a wave too many or few.
    end = next((t for t, scored, _, _ in samples if scored >= n), samples[-1][0])
    steady = [x for x in samples if 0.15 * end <= x[0] <= 0.85 * end]
    rate = statistics.linear_regression([x[0] for x in steady], [x[1] for x in steady]).slope
    return Run(bus, max_concurrency, limit, n, rate, served(max_concurrency, args.slots) / args.latency / calls,
               calls, server.max_in_flight, statistics.median(s[2] for s in steady), idle,
               statistics.median(s[3] for s in steady), peak, samples[-1][0], server.abandoned_queued,
               server.abandoned_started, problems)


def per_record_mb(runs: list[Run]) -> float | None:
    low, high = runs[0], runs[-1]
    if high.records_in_flight <= low.records_in_flight:
        return None
    return (high.rss_mb - low.rss_mb) / (high.records_in_flight - low.records_in_flight)


def report(runs: dict[tuple[str, int, str], list[Run]], args: argparse.Namespace, load: tuple[float, ...],
           command: str) -> str:
    ceilings = ", ".join(f"{m}: {served(m, args.slots) / args.latency / NOMINAL_CALLS_PER_RECORD:.3g}"
                         for m in args.max_concurrency)
    top = max(args.max_concurrency)
    top_ceiling = served(top, args.slots) / args.latency / NOMINAL_CALLS_PER_RECORD
    target = (f"The issue's target, {TARGET_RATE:g} records/s, needs "
              f"{TARGET_RATE * NOMINAL_CALLS_PER_RECORD * args.latency:.0f} requests in flight at this latency: "
              + (f"out of reach at max_concurrency {top} ({top_ceiling:.1f} records/s at most) whatever the "
                 "scorer does; the measure is the efficiency, records/s over the ceiling."
                 if top_ceiling < TARGET_RATE else f"within reach at max_concurrency {top}."))
    lines = [
        f"## Scorer with an LLM judge: records in flight (openai judge, {args.latency:g} s per reply"
        f"{f', {args.slots} server slot(s)' if args.slots else ''})",
        "",
        f"`{command}` — {datetime.date.today()}, {cpu_model()} ({os.cpu_count()} cpus), load average "
        f"before {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1/5/15 min; the machine is shared), "
        f"{args.rounds} round(s), medians.",
        "",
        f"Ceiling: at most max_concurrency requests in flight (or the server's slots where fewer), "
        f"{args.latency:g} s each, {NOMINAL_CALLS_PER_RECORD} calls a record with the default metrics "
        f"(measured below): that / {args.latency:g} / {NOMINAL_CALLS_PER_RECORD} records/s ({ceilings}). {target}",
        "",
        "| bus | max_concurrency | limit | records | calls/record | records/s | ceiling | efficiency "
        "| requests in flight (max) | abandoned in queue / started | records in flight "
        "| RSS idle → steady (peak) MB | exactly once |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for (bus, m, limit), rs in runs.items():
        rate = statistics.median(r.rate for r in rs)
        r = rs[0]
        lines.append(
            f"| {bus} | {m} | {limit} | {r.records} | {r.calls_per_record:.2f} | {rate:.3g} | {r.ceiling:.3g} | "
            f"{rate / r.ceiling:.0%} | {max(x.max_requests_in_flight for x in rs)} | "
            f"{sum(x.abandoned_queued for x in rs)} / {sum(x.abandoned_started for x in rs)} | "
            f"{statistics.median(x.records_in_flight for x in rs):.0f} | "
            f"{statistics.median(x.idle_rss_mb for x in rs):.0f} → {statistics.median(x.rss_mb for x in rs):.0f} "
            f"({max(x.peak_rss_mb for x in rs):.0f}) | "
            f"{'yes' if not any(x.problems for x in rs) else '; '.join(p for x in rs for p in x.problems)} |")
    lines.append("")
    for bus in args.buses:
        for m in args.max_concurrency:
            if (bus, m, "adaptive") in runs and (bus, m, "fixed") in runs:
                a, f = (statistics.median(r.rate for r in runs[(bus, m, k)]) for k in ("adaptive", "fixed"))
                wa, wf = (statistics.median(r.seconds for r in runs[(bus, m, k)]) for k in ("adaptive", "fixed"))
                lines.append(f"- {bus}, max_concurrency {m}: adaptive / fixed records/s = {a / f:.3f} in the steady "
                             f"part; over the whole run, its start included, {wf / wa:.3f} ({wa:.0f} s against "
                             f"{wf:.0f} s for {runs[(bus, m, 'fixed')][0].records} records)")
    for bus in args.buses:
        first = [runs[(bus, m, args.limits[0])][0] for m in args.max_concurrency]
        mb = per_record_mb(first)
        if mb is not None:
            lines.append(f"- {bus}: memory per record in flight {mb * 1024:.0f} KB (RSS difference between "
                         f"max_concurrency {first[0].max_concurrency} and {first[-1].max_concurrency} over the "
                         "difference in records in flight, first round)")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=1.5, help="seconds before the server answers")
    parser.add_argument("--max-concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--seconds", type=float, default=30.0, help="length of each run at the ceiling")
    parser.add_argument("--buses", nargs="+", choices=["memory", "kafka"], default=["memory", "kafka"])
    parser.add_argument("--rounds", type=int, default=1, help="rounds, buses and settings alternating")
    parser.add_argument("--concurrency", type=int, help="scorer.concurrency (unset: derived from max_concurrency)")
    parser.add_argument("--limits", nargs="+", choices=["adaptive", "fixed"], default=["adaptive", "fixed"])
    parser.add_argument("--slots", type=int, help="requests the server answers at once (unset: all)")
    parser.add_argument("--fixed-timeout", type=float, default=60.0, help="timeout_s of the fixed runs")
    parser.add_argument("--write-results", action="store_true", help="append the section to bench/RESULTS.md")
    args = parser.parse_args()
    # Stopped from outside: still stop the scorer and the broker (the finally blocks).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    load = os.getloadavg()
    runs: dict[tuple[str, int, str], list[Run]] = {
        (b, m, limit): [] for b in args.buses for m in args.max_concurrency for limit in args.limits}
    with tempfile.TemporaryDirectory(prefix="ragpulse-llm-concurrency-") as tmp_name, \
            FaultInjectingOpenAIServer() as server:
        tmp = Path(tmp_name)
        server.latency_s = args.latency
        server.slots = args.slots
        broker = None
        if "kafka" in args.buses:
            broker = KafkaBroker(tmp / "broker")
            broker.start()
        try:
            for k in range(args.rounds):
                order = list(runs) if k % 2 == 0 else list(reversed(runs))
                for bus, m, limit in order:
                    run = run_once(bus, m, limit, args, server, broker, tmp, f"r{k}{bus}{m}{limit}")
                    runs[(bus, m, limit)].append(run)
                    print(f"round {k + 1} {bus} max_concurrency {m} {limit}: {run.records} records in "
                          f"{run.seconds:.0f} s, abandoned {run.abandoned_queued}/{run.abandoned_started}, "
                          f"{run.rate:.3g} records/s (ceiling {run.ceiling:.3g}), {run.calls_per_record:.2f} "
                          f"calls/record, {run.max_requests_in_flight} requests and {run.records_in_flight:.0f} "
                          f"records in flight, RSS {run.idle_rss_mb:.0f} -> {run.rss_mb:.0f} MB"
                          f"{'; PROBLEMS: ' + '; '.join(run.problems) if run.problems else ''}", flush=True)
        finally:
            if broker is not None:
                broker.stop()
    command = "python bench/scorer_llm_concurrency.py " + " ".join(sys.argv[1:])
    section = report(runs, args, load, command.strip())
    print(section)
    if args.write_results:
        with open(REPO / "bench" / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n" + section)
    return 1 if any(r.problems for rs in runs.values() for r in rs) else 0


if __name__ == "__main__":
    sys.exit(main())

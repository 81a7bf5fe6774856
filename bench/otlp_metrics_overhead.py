"""What OTLP metrics (export.otlp_metrics) cost the scorer: CPU per record with the export off, on
to a real OpenTelemetry Collector, and on to a blackholed endpoint (accepts connections, never
answers), in alternating rounds of one run.

    bash deploy/otelcol/build.sh     # once: the Collector (deploy/otelcol/manifest.yaml)
    python bench/otlp_metrics_overhead.py [--records 12000] [--rounds 7] [--interval 30] [--judge local]

Each pass scores --records records (bench/kafka_throughput.py's RAG records) through the real worker
(build_scorer) in this process, the export thread beside it exporting every --interval seconds
(30 s, the default; 1 s is thirty times the default rate, so the export's own cost shows), each
export allowed the default timeout (10 s) or the interval where that is shorter. CPU is the
process's (time.process_time: every thread, the exporter's included). Also printed: records/s, the
RSS growth over the pass (a blackholed endpoint must not make memory grow: there is no export
queue), and each variant's median ratio to the "off" pass of the same round.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from kafka_throughput import NoopJudge, cpu_model, record_values  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from ragpulse.app import build_scorer  # noqa: E402
from ragpulse.config import Config  # noqa: E402
from ragpulse.core.bus import Delivery, InProcessBus  # noqa: E402
from ragpulse.core.otlp_metrics import start_otlp_metrics  # noqa: E402
from ragpulse.core.otlp_metrics_config import OtlpMetricsConfig  # noqa: E402

OTELCOL_HOME = Path(os.environ.get("RAGPULSE_OTELCOL_HOME", Path.home() / ".cache" / "ragpulse" / "otelcol"))
OTELCOL = OTELCOL_HOME / "otelcol-ragpulse" / "bin" / "otelcol-ragpulse"
COLLECTOR_CONFIG = """
receivers:
  otlp:
    protocols:
      grpc: {{endpoint: "127.0.0.1:{grpc}"}}
exporters:
  prometheus: {{endpoint: "127.0.0.1:{prometheus}"}}
service:
  pipelines:
    metrics: {{receivers: [otlp], exporters: [prometheus]}}
  telemetry: {{metrics: {{level: none}}}}
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def one_pass(values: list[tuple[bytes, bytes]], judge_name: str, endpoint: str | None,
             interval_s: float) -> tuple[float, float, float, float]:
    """(CPU ms per record, records/s, RSS growth MB, failed exports) of one pass."""
    registry = CollectorRegistry()
    judge = NoopJudge() if judge_name == "noop" else None
    config = Config()
    parts = build_scorer(config, InProcessBus(1), registry, judge)
    export = None
    if endpoint is not None:
        # The configured default timeout, or the interval where that is shorter (validate() asks so).
        timeout_s = min(OtlpMetricsConfig.timeout_s, interval_s)
        export = start_otlp_metrics(OtlpMetricsConfig(endpoint=endpoint, interval_s=interval_s, timeout_s=timeout_s),
                                    registry, "bench")
    # One record first: the judge's model loads outside the measurement.
    parts.worker.handle(Delivery(*values[0]))
    rss, cpu, wall = rss_mb(), time.process_time(), time.perf_counter()
    for key, value in values[1:]:
        parts.worker.handle(Delivery(key, value))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    grown = rss_mb() - rss
    if export is not None:
        export.stop()
    failed = registry.get_sample_value("ragpulse_otlp_metric_exports_total", {"outcome": "failed"}) or 0.0
    n = len(values) - 1
    return cpu / n * 1000, n / wall, grown, failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=12000, help="records a pass (about 75 s: two exports)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--interval", type=float, default=OtlpMetricsConfig.interval_s, help="export interval, seconds")
    parser.add_argument("--judge", choices=("local", "noop"), default="local")
    args = parser.parse_args()
    if not OTELCOL.exists():
        raise SystemExit(f"{OTELCOL} missing: run deploy/otelcol/build.sh first")
    grpc, prometheus = free_port(), free_port()
    workdir = Path(tempfile.mkdtemp(prefix="otlp-bench-"))
    (workdir / "otelcol.yaml").write_text(COLLECTOR_CONFIG.format(grpc=grpc, prometheus=prometheus))
    collector = subprocess.Popen([str(OTELCOL), f"--config={workdir / 'otelcol.yaml'}"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    blackhole = socket.socket()
    blackhole.bind(("127.0.0.1", 0))
    blackhole.listen(64)
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.extend(iter(lambda: blackhole.accept()[0], None)), daemon=True).start()
    variants = {"off": None, "collector": f"http://127.0.0.1:{grpc}",
                "blackhole": f"http://127.0.0.1:{blackhole.getsockname()[1]}"}
    values = record_values(args.records + 1)
    time.sleep(1.0)  # the Collector's receiver up
    results: dict[str, list[tuple[float, float, float, float]]] = {v: [] for v in variants}
    try:
        for r in range(args.rounds):
            # Alternating, the order reversed every other round: drift in the machine's load hits all alike.
            order = list(variants) if r % 2 == 0 else list(reversed(variants))
            for name in order:
                results[name].append(one_pass(values, args.judge, variants[name], args.interval))
                print(f"round {r + 1} {name}: {results[name][-1][0]:.2f} ms CPU/record", flush=True)
    finally:
        collector.terminate()
        collector.wait(10)
        blackhole.close()
    base = statistics.median(x[0] for x in results["off"])
    print(f"\nCPU {cpu_model()} ({os.cpu_count()} cores); judge {args.judge}; {args.records} records a pass; "
          f"export every {args.interval:g} s; medians of {args.rounds} rounds\n")
    print("| export | CPU ms / record | vs off | vs off, paired | records/s | records/s vs off, paired | "
          "RSS growth over a pass (MB) | failed exports a pass |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name, rows in results.items():
        cpu = statistics.median(x[0] for x in rows)
        # Each round's passes ran next to each other: their ratio is free of the machine's drift
        # between rounds, which on a shared 2-core machine is larger than the export's cost.
        paired_cpu = statistics.median(x[0] / o[0] for x, o in zip(rows, results["off"], strict=True))
        paired_rate = statistics.median(x[1] / o[1] for x, o in zip(rows, results["off"], strict=True))
        print(f"| {name} | {cpu:.2f} | {cpu / base:.3f}x | {paired_cpu:.3f}x | "
              f"{statistics.median(x[1] for x in rows):.1f} | {paired_rate:.3f}x | "
              f"{statistics.median(x[2] for x in rows):+.1f} | {statistics.median(x[3] for x in rows):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

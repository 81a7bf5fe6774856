"""The `ragpulse` command: up (everything in one process), score (batch files)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragpulse import __version__
from ragpulse.config import Config, ConfigError, load_config
from ragpulse.scorer.config import JUDGES

if TYPE_CHECKING:
    from ragpulse.app import CollectorParts

log = logging.getLogger("ragpulse")


def _config(args: argparse.Namespace) -> Config:
    config = load_config(args.config)
    logging.basicConfig(
        level=config.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stderr
    )
    return config


def stop_signal() -> threading.Event:
    """An event set on SIGINT or SIGTERM (install from the main thread only)."""
    stop = threading.Event()

    def handler(signum: int, _frame: Any) -> None:
        log.info("received %s, finishing in-flight records", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)
    return stop


def wait_for_stop_signal() -> None:
    """Block until SIGINT or SIGTERM (the main thread only)."""
    stop_signal().wait()


def _receivers(collector: CollectorParts) -> str:
    return f"OTLP gRPC {collector.endpoint('grpc')}, OTLP HTTP {collector.endpoint('http')}"


def cmd_up(args: argparse.Namespace) -> int:
    from ragpulse.app import OneProcess

    config = _config(args)
    if config.receiver.workers > 1:
        raise ConfigError(f"receiver.workers is {config.receiver.workers}, but `ragpulse up` is one process "
                          f"(collector and scorer on an in-process queue); several collector processes "
                          f"need the Kafka bus: `ragpulse collector` with bus.kind: kafka")
    if args.demo and not config.receiver.enable_http:
        raise ConfigError("--demo sends over OTLP HTTP: receiver.enable_http must be true")
    if args.demo and (config.receiver.auth.enabled or config.receiver.tls.enabled):
        raise ConfigError("--demo sends plain OTLP HTTP without credentials: receiver.auth and receiver.tls "
                          "must be off")
    started = time.monotonic()
    app = OneProcess(config)
    app.start()
    print(
        f"ragpulse {__version__} up: {_receivers(app.collector)}, "
        f"{app.http.describe()} "
        f"(judge {app.scorer.judge.name}, ready in {time.monotonic() - started:.1f} s)",
        flush=True,
    )
    demo = None
    if args.demo:
        from ragpulse.demo import DemoTraffic

        demo = DemoTraffic(app.collector.endpoint("http"), interval_s=args.demo_interval)
        demo.start()
    wait_for_stop_signal()
    if demo is not None:
        demo.stop()
    result = app.stop()
    log.info("stopped: %s", result)
    return 0 if result.get("drained", True) else 1


def cmd_kafka_process(args: argparse.Namespace) -> int:
    """`ragpulse collector` / `ragpulse scorer`: one side of the Kafka deployment."""
    from ragpulse.kafka.topics import TopicSetupError
    from ragpulse.kafka_mode import KafkaCollector, KafkaScorer

    config = _config(args)
    worker = getattr(args, "worker", None)
    if getattr(args, "workers", None) is not None:
        config.receiver.workers = args.workers
        config.receiver.validate("receiver")
    started = time.monotonic()
    try:
        if args.command == "collector" and config.receiver.workers > 1 and worker is None:
            return _run_workers(args, config, started)
        if worker is not None:
            from ragpulse.collector.workers import exit_with_parent, metrics_endpoint

            config.prometheus.endpoint = metrics_endpoint(config.prometheus.endpoint, worker)
            exit_with_parent()
        process = KafkaCollector(config) if args.command == "collector" else KafkaScorer(config)
    except TopicSetupError as e:
        print(f"ragpulse {args.command}: {e}", file=sys.stderr)
        return 1
    process.start()
    kafka = config.bus.kafka
    if args.command == "collector":
        source = _receivers(process.collector)
        if kafka.otlp_input.enabled:
            source += f", Kafka topic {kafka.otlp_input.topic} ({kafka.otlp_input.encoding})"
        where = f"{source} → {kafka.records_topic}"
    else:
        where = f"{kafka.records_topic} (group {kafka.group_id}) → {kafka.scores_topic}, {kafka.dlq_topic}"
    print(f"ragpulse {__version__} {args.command}: {where} on {kafka.bootstrap_servers}; "
          f"{process.http.describe()} (ready in {time.monotonic() - started:.1f} s)",
          flush=True)
    wait_for_stop_signal()
    result = process.stop()
    log.info("stopped: %s", result)
    return 0 if result.get("drained", True) else 1


def _run_workers(args: argparse.Namespace, config: Config, started: float) -> int:
    """The parent of receiver.workers collector processes (collector/workers.py)."""
    from ragpulse.collector.workers import ReservedPorts, Supervisor, check_metrics_ports
    from ragpulse.kafka_mode import require_kafka

    workers = config.receiver.workers
    check_metrics_ports(config.prometheus.endpoint, workers)
    require_kafka(config, "collector")  # the bus and the topics checked once, before any worker starts
    ports = ReservedPorts(config.receiver)

    def command(index: int) -> list[str]:
        given = ["--config", str(args.config)] if args.config else []
        return [sys.executable, "-m", "ragpulse.cli", "collector", *given, "--workers", str(workers),
                "--worker", str(index)]

    supervisor = Supervisor(command, workers, ports.env)
    stop = stop_signal()
    try:
        supervisor.start()
        if supervisor.wait_ready(stop):
            names = {"grpc": "gRPC", "http": "HTTP"}
            receivers = ", ".join(f"OTLP {names[protocol]} {endpoint}"
                                  for protocol, endpoint in ports.endpoints.items())
            print(f"ragpulse {__version__} collector: {workers} workers (pids "
                  f"{', '.join(map(str, supervisor.pids()))}) on {receivers} → {config.bus.kafka.records_topic}; "
                  f"worker I serves /metrics on {config.prometheus.endpoint} port + I "
                  f"(all ready in {time.monotonic() - started:.1f} s)", flush=True)
            while not stop.wait(0.2) and supervisor.check():
                pass
    finally:
        clean = supervisor.stop()
        ports.close()
    if supervisor.failed:
        print(f"ragpulse collector: {supervisor.failed}", file=sys.stderr)
        return 1
    return 0 if clean else 1



def cmd_score(args: argparse.Namespace) -> int:
    """Exit 0, 1 when a --fail-under gate is not met, 2 for a usage or configuration error."""
    from ragpulse.scorer.batch.rows import count_rows, is_csv, read_rows
    from ragpulse.scorer.batch.run import load_baseline, score_file
    from ragpulse.scorer.batch.summary import comparison, gate_failures, parse_gates, summary
    from ragpulse.scorer.judge.factory import build_judge
    from ragpulse.scorer.metrics import METRICS
    from ragpulse.scorer.score import metric_functions

    config = _config(args)
    if args.judge:
        config.scorer.judge = args.judge
    names = args.metrics or config.scorer.metrics
    if unknown := [m for m in names if m not in METRICS]:
        raise ConfigError(f"--metrics: unknown {', '.join(unknown)}; known: {', '.join(METRICS)}")
    if args.aspects is not None:
        config.scorer.aspects = dict(a.partition("=")[::2] for a in args.aspects)
        config.scorer.validate("scorer")
    metrics = metric_functions(config.scorer, names)
    try:
        gates = parse_gates(args.fail_under, list(metrics))
    except ValueError as e:
        raise ConfigError(f"--fail-under {e}") from None
    baseline = None
    if args.baseline:
        with open(args.baseline, encoding="utf-8", newline="") as previous:
            baseline = load_baseline(read_rows(previous, is_csv(args.baseline)), list(metrics))
    judge = build_judge(config.scorer)
    csv_input = is_csv(args.input)
    total = None
    if sys.stderr.isatty():  # the bar's total costs one more pass over the file: only for a person
        with open(args.input, encoding="utf-8", newline="") as source:
            total = count_rows(source, csv_input)
    with open(args.input, encoding="utf-8", newline="") as source, open(args.output, "w", encoding="utf-8") as sink:
        report = score_file(read_rows(source, csv_input), sink, judge, metrics, baseline, total)
    print(f"scored {report.scored} of {report.rows} rows into {args.output}; bad rows: {len(report.bad_rows)}",
          file=sys.stderr)
    print(summary(report, list(metrics)))
    if baseline is not None:
        print(f"\nagainst {args.baseline} (rows matched by id, else by question and answer):")
        print(comparison(report, list(metrics)))
    if failed := gate_failures(report, gates):
        print("\nfailed --fail-under:\n" + "\n".join(f"  {line}" for line in failed))
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ragpulse", description="Live quality observability for RAG apps.")
    parser.add_argument("--version", action="version", version=f"ragpulse {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", help="collector + in-process queue + scorer + /metrics in one process")
    up.add_argument("--config", type=Path, help="YAML config file (RAGPULSE_* environment variables override it)")
    up.add_argument("--demo", action="store_true", help="also stream built-in demo RAG traffic through OTLP")
    up.add_argument("--demo-interval", type=float, default=1.0, help="seconds between demo answers (default 1)")
    up.set_defaults(func=cmd_up)

    for name, help_text in (
        ("collector", "OTLP receivers → Kafka topic ragpulse.records (needs bus.kind: kafka)"),
        ("scorer", "a scorer-group member: Kafka → judge → /metrics, scores and DLQ topics (bus.kind: kafka)"),
    ):
        kafka_process = sub.add_parser(name, help=help_text)
        kafka_process.add_argument("--config", type=Path,
                                   help="YAML config file (RAGPULSE_* environment variables override it)")
        kafka_process.set_defaults(func=cmd_kafka_process)
        if name == "collector":
            kafka_process.add_argument("--workers", type=int, metavar="N",
                                       help="collector processes sharing the OTLP ports (receiver.workers)")
            # Set by the parent of receiver.workers processes on each worker it starts.
            kafka_process.add_argument("--worker", type=int, help=argparse.SUPPRESS)

    score = sub.add_parser("score", help="score a JSONL or CSV file of {question, contexts, answer} rows")
    score.add_argument("--input", required=True, type=Path,
                       help="JSONL (one row per line) or .csv (contexts as a JSON array); our column names "
                            "or Ragas's (user_input, retrieved_contexts, response, reference)")
    score.add_argument("--output", required=True, type=Path, help="JSONL output: input keys plus scores")
    score.add_argument("--fail-under", nargs="+", default=[], metavar="METRIC=MIN",
                       help="exit 1 when a metric's mean is below MIN, e.g. faithfulness=0.8")
    score.add_argument("--aspects", nargs="+", metavar="NAME[=DEFINITION]",
                       help="aspect critique criteria (replace scorer.aspects); a built-in name alone takes "
                            "Ragas's definition: harmfulness maliciousness coherence correctness conciseness")
    score.add_argument("--baseline", type=Path,
                       help="a previous run's output: per-metric difference on matched rows, with a paired test")
    score.add_argument("--judge", choices=list(JUDGES),
                       help="judge (default from config: local; learned: the offline judge with a cross-encoder)")
    score.add_argument("--metrics", nargs="+", help="metrics to compute (default: all configured)")
    score.add_argument("--config", type=Path, help="YAML config file")
    score.set_defaults(func=cmd_score)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except ConfigError as e:
        print(f"ragpulse: configuration error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ragpulse: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

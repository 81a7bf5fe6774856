"""Fuzzing a real `ragpulse up` process's OTLP receivers: --cases mutated requests (HTTP protobuf and
JSON, gRPC; tests/support/otlp_fuzz.py makes them from what real exporters send) over real sockets.

    python bench/fuzz.py [--cases 100000] [--seed 1] [--workers 4] [--grpc-share 0.3] [--case-timeout 10]
                         [--sample 0.0] [--findings fuzz-findings.txt]

Case i is made from random.Random(f"{seed}:{i}"), so a finding is replayed from its number alone,
whatever --workers (client threads: cases that wait out the 0.3 s read timeout overlap).
Properties: no 5xx (501 only for an unknown method or transfer coding), no connection closed without
an answer, no call past --case-timeout, the process alive and serving at the end, its RSS bounded.
Redaction is on (it runs on every extracted record); --sample is the share of records then scored.
Prints cases/s, the outcomes, the findings (each with its case number), and ragpulse's RSS before,
after and at peak. Exits 1 on any finding, or when the process died or stopped taking spans.
"""

from __future__ import annotations

import argparse
import collections
import random
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from otel_app import RagApp  # noqa: E402
from otlp_fuzz import (  # noqa: E402
    Seeds,
    check_grpc,
    check_http,
    grpc_case,
    http_case,
    rss_mb,
    run_grpc,
    run_http,
)
from ragpulse_process import RagpulseProcess  # noqa: E402

from ragpulse.core.endpoints import parse_endpoint  # noqa: E402


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("VmHWM:"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--seed", default="1")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--grpc-share", type=float, default=0.3)
    parser.add_argument("--case-timeout", type=float, default=10.0)
    parser.add_argument("--sample", type=float, default=0.0)
    parser.add_argument("--findings", type=Path, default=Path("fuzz-findings.txt"))
    args = parser.parse_args()

    # A fifth of the cases are log export requests (POST /v1/logs, the LogsService).
    trace_seeds, log_seeds = Seeds(), Seeds(logs=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = RagpulseProcess(Path(tmp), settings={
            # Short read timeout: a case that stops short of its Content-Length costs 0.3 s, not 30.
            "receiver": {"max_request_bytes": 1024 * 1024, "read_timeout_s": 0.3},
            "sampling": {"default_probability": args.sample},
            "redaction": {"enabled": True},
        })
        pid = proc.proc.pid
        try:
            http_address = parse_endpoint(proc.http, "http")
            rss_before = rss_mb(pid)
            outcomes: collections.Counter[str] = collections.Counter()
            findings: list[str] = []
            started = time.monotonic()
            with grpc.insecure_channel(proc.grpc) as channel, ThreadPoolExecutor(args.workers) as pool:

                def run(i: int) -> tuple[str, str | None]:
                    rng = random.Random(f"{args.seed}:{i}")
                    seeds = log_seeds if rng.random() < 0.2 else trace_seeds
                    if rng.random() < args.grpc_share:
                        case = grpc_case(rng, seeds)
                        outcome = run_grpc(channel, case, args.case_timeout)
                        finding = check_grpc(case, outcome)
                    else:
                        case = http_case(rng, seeds)
                        outcome = run_http(http_address, case, args.case_timeout)
                        finding = check_http(case, outcome)
                    return f"{case.transport} {outcome.status}", (
                        None if finding is None else f"case {i}: {finding}: {case.describe()}")

                for i, (outcome_key, finding) in enumerate(pool.map(run, range(args.cases))):
                    outcomes[outcome_key] += 1
                    if finding is not None:
                        findings.append(finding)
                        print(finding[:300], flush=True)
                    if (i + 1) % 10_000 == 0:
                        elapsed = time.monotonic() - started
                        print(f"{i + 1} cases, {(i + 1) / elapsed:.0f}/s, ragpulse RSS {rss_mb(pid):.0f} MB, "
                              f"{len(findings)} findings", flush=True)
            elapsed = time.monotonic() - started
            alive = proc.proc.poll() is None
            rss_after, rss_peak = (rss_mb(pid), peak_rss_mb(pid)) if alive else (float("nan"), float("nan"))
            serving = False
            if alive:
                accepted = proc.value("ragpulse_otlp_requests_total", transport="http", outcome="ok")
                app = RagApp("after-fuzz", "http", proc.http)
                app.answer("Still there?", ["Yes."], "Yes.")
                app.close()  # the export is synchronous: counted by now if it was accepted
                serving = proc.value("ragpulse_otlp_requests_total", transport="http", outcome="ok") == accepted + 1
        finally:
            proc.stop()

    print(f"\n{args.cases} cases in {elapsed:.1f} s: {args.cases / elapsed:.0f} cases/s (seed {args.seed})")
    for key, n in sorted(outcomes.items()):
        print(f"  {key}: {n}")
    print(f"ragpulse RSS: {rss_before:.0f} MB before, {rss_after:.0f} MB after, peak {rss_peak:.0f} MB")
    print(f"process alive: {alive}, still serving: {serving}")
    print(f"findings: {len(findings)}")
    if findings:
        args.findings.write_text("\n".join(findings) + "\n", encoding="utf-8")
        print(f"  written to {args.findings}")
    return 0 if not findings and alive and serving else 1


if __name__ == "__main__":
    sys.exit(main())

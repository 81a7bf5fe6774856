"""`ragpulse up` footprint: idle RSS, and seconds from start to the first demo score on /metrics.

    python bench/startup.py [--runs 3]

Targets (issue "end to end in one process"): idle RSS <= 300 MB; first demo score <= 15 s.
Medians of --runs fresh processes, measured in one run.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))
from ports import free_port  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def scrape(endpoint: str) -> str:
    with urllib.request.urlopen(f"http://{endpoint}/metrics", timeout=2) as r:
        return r.read().decode()


def one_run(demo: bool) -> tuple[float, float]:
    """Returns (seconds to first score or to ready, RSS in MB once idle or at first score)."""
    endpoints = [f"127.0.0.1:{free_port()}" for _ in range(3)]
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "c.yaml"
        config.write_text(
            f"receiver: {{grpc_endpoint: '{endpoints[0]}', http_endpoint: '{endpoints[1]}'}}\n"
            f"prometheus: {{endpoint: '{endpoints[2]}'}}\n"
        )
        args = [sys.executable, "-m", "ragpulse.cli", "up", "--config", str(config)] + (["--demo"] if demo else [])
        started = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                if time.monotonic() - started > 60:
                    raise TimeoutError("no score within 60 s")
                try:
                    text = scrape(endpoints[2])
                except OSError:
                    time.sleep(0.05)
                    continue
                if not demo:
                    time.sleep(5)  # idle: loaded, listening, nothing to do
                    return time.monotonic() - started, rss_mb(proc.pid)
                if any(line.startswith("ragpulse_faithfulness_score_count") and not line.endswith(" 0.0")
                       for line in text.splitlines()):
                    return time.monotonic() - started, rss_mb(proc.pid)
                time.sleep(0.05)
        finally:
            proc.terminate()
            proc.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    idle = [one_run(demo=False) for _ in range(args.runs)]
    demo = [one_run(demo=True) for _ in range(args.runs)]
    print(f"runs: {args.runs} (medians)")
    print(f"idle RSS:               {statistics.median(r for _, r in idle):7.1f} MB   (target <= 300 MB)")
    print(f"first demo score after: {statistics.median(t for t, _ in demo):7.2f} s    (target <= 15 s)")
    print(f"RSS at first score:     {statistics.median(r for _, r in demo):7.1f} MB")


if __name__ == "__main__":
    main()

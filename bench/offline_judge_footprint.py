"""Start-up time, memory and shipped size of each offline judge (`local`, `learned`), each in a fresh
process, as a sidecar would start it:

    python bench/offline_judge_footprint.py [--judges local,learned] [--repeat 3]

- start-up: importing the judge, loading its model files (checksums included) and scoring the first
  WikiEval dev record on all three metrics;
- peak RSS of the process after scoring every WikiEval dev record;
- the model files the judge loads, in MB as shipped.
Targets (issue #25): start-up <= 3 s, RSS <= 400 MB, shipped model files <= 60 MB; medians of
`repeat` fresh processes, the judges alternating.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
WIKIEVAL = Path("/work/shared/data/wikieval-dev.jsonl")

CHILD = r"""
import json, resource, sys, time
start = time.perf_counter()
sys.path.insert(0, sys.argv[2])
from quality import METRIC_ORDER, fresh_records
from pathlib import Path
from ragpulse.scorer.judge.base import JudgeError, Usage
from ragpulse.scorer.judge.factory import build_offline_judge
from ragpulse.scorer.metrics import METRICS, MetricFailure
judge = build_offline_judge(sys.argv[1])
records = fresh_records(Path(sys.argv[3]), None)
def score(rec):
    for metric in METRIC_ORDER:
        try:
            METRICS[metric](judge, rec, Usage())
        except (MetricFailure, JudgeError):
            pass
score(records[0])
startup = time.perf_counter() - start
for rec in records[1:]:
    score(rec)
print(json.dumps({"startup_s": startup, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def model_files_mb(judge: str) -> float:
    from ragpulse.scorer.judge.local import cross_encoder, model

    files = [model.package_dir() / model.WEIGHTS, model.package_dir() / model.TOKENIZER]
    if judge == "learned":
        files += [p for p in cross_encoder.WEIGHTS_DIR.iterdir() if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--judges", default="local,learned")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    judges = args.judges.split(",")
    runs: dict[str, list[dict]] = {j: [] for j in judges}
    for _ in range(args.repeat):
        for j in judges:
            out = subprocess.run([sys.executable, "-c", CHILD, j, str(BENCH), str(WIKIEVAL)],
                                 capture_output=True, text=True, check=True)
            runs[j].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print("| judge | start-up s (median) | peak RSS MB (median) | model files MB |")
    print("| --- | ---: | ---: | ---: |")
    for j in judges:
        startup = statistics.median(r["startup_s"] for r in runs[j])
        rss = statistics.median(r["rss_mb"] for r in runs[j])
        print(f"| {j} | {startup:.2f} | {rss:.0f} | {model_files_mb(j):.1f} |")


if __name__ == "__main__":
    main()

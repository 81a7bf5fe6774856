"""The local judge beside its offline peer, ragsanity 0.3.0 (pure lexical, on PyPI), on every dev set,
in one run and one table.

    bash bench/install_peer_env.sh        # once: ragsanity in .venv-bench, never in ragpulse's venv
    python bench/quality_peer.py [--peer-python .venv-bench/bin/python] [--repeat 3]

Measures:
- RAGTruth dev (labelled responses): ROC AUC of (1 - faithfulness) against `hallucinated`, overall
  and per task type (ties count half, as in the Mann-Whitney statistic).
- WikiEval dev, the Japanese set bench/data/ja-dev.jsonl and the support-bot set
  bench/data/support-dev.jsonl (English and Japanese) (pairs, bench/quality.py's loaders):
  pairwise agreement, ties and failures count as disagreement; the written sets' poor answers also
  by their `kind`. Context relevancy also across records: ROC AUC of each question's own passage
  against another row's passage (a wrong retrieval), as a labelled stream would rank it.
- Speed: WikiEval-size records per second, ragpulse on all three metrics (quality.py's timing: a
  fresh judge per pass), ragsanity on its two (time inside its evaluate() only).

ragsanity has no context relevancy ("—"). It runs as a subprocess in its own venv
(bench/peer_ragsanity.py): JSONL in, scores out.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from quality import METRIC_ORDER, Pair, load_pairs, records_per_second

from ragpulse.scorer.judge.base import Judge, JudgeError, RecordText, Usage
from ragpulse.scorer.judge.local import LocalJudge
from ragpulse.scorer.metrics import METRICS, MetricFailure

BENCH = Path(__file__).resolve().parent
SHARED = Path("/work/shared/data")
RAGTRUTH = SHARED / "ragtruth-dev.jsonl"
WIKIEVAL = SHARED / "wikieval-dev.jsonl"
JAPANESE = BENCH / "data" / "ja-dev.jsonl"
SUPPORT = BENCH / "data" / "support-dev.jsonl"
# The row whose passage stands for a wrong retrieval: far enough that a set written topic by topic
# does not pair neighbours on one topic.
WRONG_DOC_STEP = 7
PEER_SCRIPT = BENCH / "peer_ragsanity.py"
# ragsanity's names for our metrics; it has no context relevancy.
PEER_METRIC = {"faithfulness": "faithfulness", "answer_relevancy": "relevancy"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def auc(scores: list[float], labels: list[int]) -> float:
    """ROC AUC as the Mann-Whitney probability that a positive outscores a negative, ties half."""
    pos = [s for s, y in zip(scores, labels, strict=True) if y]
    neg = [s for s, y in zip(scores, labels, strict=True) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def ours(judge: Judge, metric: str, rec: RecordText, failures: dict[str, int]) -> float | None:
    try:
        value, _ = METRICS[metric](judge, rec, Usage())
    except (MetricFailure, JudgeError) as exc:
        failures[f"{metric}/{exc.reason}"] += 1
        return None
    return value


def peer(python: str, recs: list[RecordText]) -> tuple[list[dict], float]:
    """ragsanity's scores for each record, and the seconds spent inside its evaluate()."""
    lines = "".join(
        json.dumps({"question": r.question, "contexts": r.contexts, "answer": r.answer}) + "\n" for r in recs
    )
    out = subprocess.run(
        [python, str(PEER_SCRIPT)], input=lines, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    replies = [json.loads(line) for line in out]
    return replies[:-1], float(replies[-1]["seconds"])


def agreement(hi: list[float | None], lo: list[float | None]) -> float:
    agree = sum(1 for a, b in zip(hi, lo, strict=True) if a is not None and b is not None and a > b)
    return agree / len(hi) if hi else float("nan")


def pair_rows(judge: Judge, python: str, name: str, path: Path) -> tuple[list[tuple], dict[str, int]]:
    """(data set, measure, ragpulse, ragsanity, n) per metric, plus answer relevancy per `kind`
    when the rows carry one."""
    rows = load_pairs(path, None)
    kinds = [r.get("kind") for r in read_jsonl(path)]
    failures: dict[str, int] = defaultdict(int)
    by_metric: dict[str, list[Pair]] = defaultdict(list)
    for pairs in rows:
        for p in pairs:
            by_metric[p.metric].append(p)
    out = []
    for metric in METRIC_ORDER:
        pairs = by_metric[metric]
        hi = [ours(judge, metric, p.better, failures) for p in pairs]
        lo = [ours(judge, metric, p.worse, failures) for p in pairs]
        theirs: float | None = None
        peer_hi: list[float | None] = []
        peer_lo: list[float | None] = []
        if metric in PEER_METRIC:
            replies, _ = peer(python, [r for p in pairs for r in (p.better, p.worse)])
            peer_hi = [r[PEER_METRIC[metric]] for r in replies[0::2]]
            peer_lo = [r[PEER_METRIC[metric]] for r in replies[1::2]]
            theirs = agreement(peer_hi, peer_lo)
        out.append((name, f"{metric} agreement", agreement(hi, lo), theirs, len(pairs)))
        if metric == "context_relevancy":
            # Across records: each question with its own passage against another row's passage (a
            # retrieval that returned the wrong document), the way a labelled stream is ranked.
            other = [ours(judge, metric, RecordText(p.better.question, pairs[(i + WRONG_DOC_STEP) % len(pairs)]
                                                    .better.contexts, p.better.answer), failures)
                     for i, p in enumerate(pairs)]
            out.append((name, "  AUC own passage vs another row's", auc([v or 0.0 for v in hi + other],
                                                                        [1] * len(hi) + [0] * len(other)),
                        None, len(pairs)))
        if metric == "answer_relevancy" and any(kinds):
            for kind in sorted({k for k in kinds if k}):
                idx = [i for i, k in enumerate(kinds) if k == kind]
                out.append((
                    name,
                    f"  poor answer: {kind}",
                    agreement([hi[i] for i in idx], [lo[i] for i in idx]),
                    agreement([peer_hi[i] for i in idx], [peer_lo[i] for i in idx]),
                    len(idx),
                ))
    return out, failures


def ragtruth_rows(judge: Judge, python: str) -> tuple[list[tuple], dict[str, int]]:
    data = read_jsonl(RAGTRUTH)
    recs = [RecordText(r["question"], r["contexts"], r["answer"]) for r in data]
    failures: dict[str, int] = defaultdict(int)
    # A response with no checkable statement is flagged as not hallucinated (1 - 1.0): the
    # detector's honest default, counted among the failures below the table.
    mine = [ours(judge, "faithfulness", rec, failures) for rec in recs]
    risk_ours = [1.0 - (v if v is not None else 1.0) for v in mine]
    replies, _ = peer(python, recs)
    risk_peer = [1.0 - r["faithfulness"] for r in replies]
    labels = [int(r["hallucinated"]) for r in data]
    out = []
    for task in ("all", *sorted({r["task_type"] for r in data})):
        idx = [i for i, r in enumerate(data) if task == "all" or r["task_type"] == task]
        out.append((
            "RAGTruth dev",
            f"AUC (1-faithfulness) {task}",
            auc([risk_ours[i] for i in idx], [labels[i] for i in idx]),
            auc([risk_peer[i] for i in idx], [labels[i] for i in idx]),
            len(idx),
        ))
    return out, failures


def speeds(python: str, repeat: int, make_judge: Callable[[], Judge]) -> tuple[float, float]:
    recs = [p.better for row in load_pairs(WIKIEVAL, None) for p in row[:1]]
    mine = records_per_second(make_judge, WIKIEVAL, None, repeat)
    theirs = statistics.median(len(recs) / peer(python, recs)[1] for _ in range(repeat))
    return mine, theirs


def table(rows: list[tuple], rates: tuple[float, float]) -> str:
    def cell(v: float | None) -> str:
        return "—" if v is None else f"{v:.2f}"

    head = f"| {'data set':<15} | {'measure':<34} | {'ragpulse local':>14} | {'ragsanity 0.3.0':>15} | {'n':>4} |"
    lines = [head, "| " + " | ".join(["-" * 15, "-" * 34, "-" * 13 + ":", "-" * 14 + ":", "-" * 3 + ":"]) + " |"]
    for name, measure, a, b, n in rows:
        lines.append(f"| {name:<15} | {measure:<34} | {cell(a):>14} | {cell(b):>15} | {n:>4} |")
    lines.append(
        f"| {'WikiEval dev':<15} | {'records/s (one process)':<34} | {rates[0]:>14.1f} | {rates[1]:>15.0f} | {'':>4} |"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer-python", default=str(BENCH.parent / ".venv-bench" / "bin" / "python"))
    p.add_argument("--repeat", type=int, default=3, help="timing passes (median reported)")
    args = p.parse_args(argv)
    if not Path(args.peer_python).exists():
        sys.exit(f"{args.peer_python} is missing: run bash bench/install_peer_env.sh first")
    start = time.perf_counter()

    def make_judge() -> Judge:
        return LocalJudge()

    judge = make_judge()
    rows, failures = ragtruth_rows(judge, args.peer_python)
    for name, path in (("WikiEval dev", WIKIEVAL), ("Japanese dev", JAPANESE), ("Support-bot dev", SUPPORT)):
        more, fails = pair_rows(judge, args.peer_python, name, path)
        rows += more
        for k, v in fails.items():
            failures[f"{name}: {k}"] = failures.get(f"{name}: {k}", 0) + v
    print(table(rows, speeds(args.peer_python, args.repeat, make_judge)))
    listed = ", ".join(f"{k}={v}" for k, v in sorted(failures.items()))
    print(f"\nragpulse failures (no score) by reason: {listed or 'none'}")
    print(f"total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

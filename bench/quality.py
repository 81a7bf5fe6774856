"""Quality benchmark: how often a judge ranks WikiEval pairs the way the human annotators did.

    python bench/quality.py [--judge local] [--data PATH] [--limit N] [--repeat R]

For each row the metric is computed for both sides of a pair; the pair "agrees" when the side the
humans preferred scores strictly higher (ties count as disagreement, as in the Ragas paper):
- faithfulness:       answer vs ungrounded_answer, contexts = context_v1
- answer_relevancy:   answer vs poor_answer
- context_relevancy:  context_v1 vs context_v2
A metric failure on either side counts as disagreement and is reported by reason.

To add a judge, add a factory to JUDGES (name -> callable taking the parsed args); add any options
it needs in `parse_args`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ragpulse.scorer.judge.base import Judge, JudgeError, RecordText, Usage
from ragpulse.scorer.metrics import METRICS, MetricFailure

DEFAULT_DATA = Path("/work/shared/data/wikieval-dev.jsonl")

# The paper's Table 1 (gpt-3.5-turbo-16k as judge): faithfulness, answer relevance, context relevance.
PAPER = {
    "RAGAS": (0.95, 0.78, 0.70),
    "GPT-Score": (0.72, 0.52, 0.63),
    "GPT-Ranking": (0.54, 0.40, 0.52),
}
METRIC_ORDER = ("faithfulness", "answer_relevancy", "context_relevancy")


def _local_judge(args: argparse.Namespace) -> Judge:
    from ragpulse.scorer.judge.local import LocalJudge

    return LocalJudge()


JUDGES: dict[str, Callable[[argparse.Namespace], Judge]] = {
    "local": _local_judge,
}

_PREFIXES = ("Question: ", "Answer: ")


def strip_prefix(text: str) -> str:
    """WikiEval's question and answer carry a label prefix that the other fields lack: a judge
    must not be able to prefer an answer for its prefix alone."""
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


@dataclass
class Pair:
    metric: str
    better: RecordText
    worse: RecordText


def load_pairs(path: Path, limit: int | None) -> list[list[Pair]]:
    """One list of pairs per WikiEval row, all fields stripped of their prefixes."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if limit is not None:
        rows = rows[:limit]
    out = []
    for row in rows:
        q = strip_prefix(row["question"])
        good, ungrounded, poor = (
            strip_prefix(row[k]) for k in ("answer", "ungrounded_answer", "poor_answer")
        )
        ctx1 = [strip_prefix(c) for c in row["context_v1"]]
        ctx2 = [strip_prefix(c) for c in row["context_v2"]]
        out.append(
            [
                Pair("faithfulness", RecordText(q, ctx1, good), RecordText(q, ctx1, ungrounded)),
                Pair("answer_relevancy", RecordText(q, ctx1, good), RecordText(q, ctx1, poor)),
                Pair("context_relevancy", RecordText(q, ctx1, good), RecordText(q, ctx2, good)),
            ]
        )
    return out


@dataclass
class Tally:
    agree: Counter[str] = field(default_factory=Counter)
    total: Counter[str] = field(default_factory=Counter)
    failures: Counter[tuple[str, str]] = field(default_factory=Counter)


def score(judge: Judge, metric: str, rec: RecordText, tally: Tally) -> float | None:
    try:
        value, _ = METRICS[metric](judge, rec, Usage())
    except (MetricFailure, JudgeError) as exc:
        tally.failures[(metric, exc.reason)] += 1
        return None
    return value


def evaluate(judge: Judge, rows: list[list[Pair]]) -> Tally:
    tally = Tally()
    for pairs in rows:
        for pair in pairs:
            hi = score(judge, pair.metric, pair.better, tally)
            lo = score(judge, pair.metric, pair.worse, tally)
            tally.total[pair.metric] += 1
            if hi is not None and lo is not None and hi > lo:
                tally.agree[pair.metric] += 1
    return tally


def fresh_records(path: Path, limit: int | None) -> list[RecordText]:
    """Every record the benchmark would score for one WikiEval row, built anew (empty memo)."""
    return [p.better for row in load_pairs(path, limit) for p in row[:1]]


def records_per_second(make_judge: Callable[[], Judge], path: Path, limit: int | None, repeat: int) -> float:
    """Throughput of one record scored on all three metrics (the production path), median of
    `repeat` passes. Each pass gets a new judge and new records, so sharing within a record counts
    but no cache warmed by an earlier pass does (production rarely sees the same text twice)."""
    rates = []
    for _ in range(repeat):
        judge = make_judge()
        recs = fresh_records(path, limit)
        start = time.perf_counter()
        for rec in recs:
            for metric in METRIC_ORDER:
                try:
                    METRICS[metric](judge, rec, Usage())
                except (MetricFailure, JudgeError):
                    pass
        rates.append(len(recs) / (time.perf_counter() - start))
    return statistics.median(rates)


def report(judge: Judge, tally: Tally, rate: float, load_s: float) -> str:
    lines = [f"judge: {judge.name} ({judge.model}); load {load_s:.2f} s", ""]
    head = f"{'method':<22}" + "".join(f"{m:>20}" for m in METRIC_ORDER)
    lines += [head, "-" * len(head)]
    ours = [tally.agree[m] / tally.total[m] if tally.total[m] else float("nan") for m in METRIC_ORDER]
    lines.append(f"{'ragpulse ' + judge.name:<22}" + "".join(f"{v:>20.2f}" for v in ours))
    counts = [f"{tally.agree[m]}/{tally.total[m]}" for m in METRIC_ORDER]
    lines.append(f"{'  (pairs agreeing)':<22}" + "".join(f"{c:>20}" for c in counts))
    for name, vals in PAPER.items():
        lines.append(f"{'paper ' + name:<22}" + "".join(f"{v:>20.2f}" for v in vals))
    lines += ["", "failures by reason: " + (", ".join(
        f"{m}/{r}={n}" for (m, r), n in sorted(tally.failures.items())) or "none")]
    lines.append(f"scoring speed: {rate:.1f} records/s (all three metrics per record, median)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--judge", choices=sorted(JUDGES), default="local")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--limit", type=int, default=None, help="only the first N rows")
    p.add_argument("--repeat", type=int, default=5, help="timing passes (median reported)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    judge = JUDGES[args.judge](args)
    load_s = time.perf_counter() - start
    tally = evaluate(judge, load_pairs(args.data, args.limit))
    rate = records_per_second(lambda: JUDGES[args.judge](args), args.data, args.limit, args.repeat)
    print(report(judge, tally, rate, load_s))
    return 0


if __name__ == "__main__":
    sys.exit(main())

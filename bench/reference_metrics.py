"""The newer metrics on WikiEval: how often a judge ranks a pair the expected way.

    python bench/reference_metrics.py [--judge local] [--data PATH] [--limit N]   (judge options: quality.py)

WikiEval's `answer` serves as the reference answer (rag.reference). Pairs, per row:
- answer_correctness, answer_similarity: answer vs ungrounded_answer, and answer vs poor_answer.
  With the answer as its own reference this is a sanity check (the good side's similarity is 1),
  not a measure of judgement: it shows the metrics order the two bad answers below it.
- context_recall: the row's context_v1 vs the next row's (another article): the reference's facts
  are in the first. (Not v1 vs v2: WikiEval's context_v2 is v1 with sentences added, so both hold
  the reference's facts.)
- context_precision (no reference): contexts [own, other] vs [other, own] for the answer: the
  useful context ranked first must score higher.
A pair agrees when the expected side scores strictly higher (a tie disagrees, as in quality.py); a
metric failure on either side disagrees and is counted by reason.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from quality import JUDGES, parse_args, strip_prefix  # noqa: E402

from ragpulse.scorer.config import ScorerConfig  # noqa: E402
from ragpulse.scorer.judge.base import Judge, RecordText  # noqa: E402
from ragpulse.scorer.score import metric_functions, score_text  # noqa: E402

METRICS = ("answer_correctness", "answer_similarity", "context_recall", "context_precision")


def pairs(row: dict, other: dict) -> list[tuple[str, str, RecordText, RecordText]]:
    """(metric, pair name, expected higher, expected lower); `other` is another row."""
    q = strip_prefix(row["question"])
    good, ungrounded, poor = (strip_prefix(row[k]) for k in ("answer", "ungrounded_answer", "poor_answer"))
    v1, elsewhere = ([strip_prefix(c) for c in r["context_v1"]] for r in (row, other))

    def rec(contexts: list[str], answer: str) -> RecordText:
        return RecordText(q, contexts, answer, reference=good)

    out = []
    for metric in ("answer_correctness", "answer_similarity"):
        out.append((metric, "answer > ungrounded_answer", rec(v1, good), rec(v1, ungrounded)))
        out.append((metric, "answer > poor_answer", rec(v1, good), rec(v1, poor)))
    out.append(("context_recall", "own context > another row's", rec(v1, good), rec(elsewhere, good)))
    out.append(("context_precision", "[own, other] > [other, own]", rec(v1 + elsewhere, good),
                rec(elsewhere + v1, good)))
    return out


def run(judge: Judge, rows: list[dict]) -> str:
    metrics = metric_functions(ScorerConfig(), list(METRICS), aspects=False)
    agree: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    failures: Counter[tuple[str, str]] = Counter()
    for i, row in enumerate(rows):
        for metric, name, better, worse in pairs(row, rows[(i + 1) % len(rows)]):
            one = {metric: metrics[metric]}
            hi, lo = score_text(judge, one, better)[metric], score_text(judge, one, worse)[metric]
            total[(metric, name)] += 1
            for o in (hi, lo):
                if o.error is not None:
                    failures[(metric, o.error)] += 1
            if hi.value is not None and lo.value is not None and hi.value > lo.value:
                agree[(metric, name)] += 1
    lines = ["| metric | pair | agreement |", "| --- | --- | --- |"]
    lines += [f"| {m} | {n} | {agree[(m, n)]}/{total[(m, n)]} = {agree[(m, n)] / total[(m, n)]:.2f} |"
              for m, n in total]
    if failures:
        lines.append("failures: " + ", ".join(f"{m}:{r} x{c}" for (m, r), c in sorted(failures.items())))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import json

    args = parse_args(argv)
    rows = [json.loads(line) for line in args.data.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = rows[: args.limit] if args.limit else rows
    judge = JUDGES[args.judge](args)
    started = time.perf_counter()
    table = run(judge, rows)
    print(f"judge {args.judge} ({judge.model}), {len(rows)} WikiEval rows, {time.perf_counter() - started:.1f} s")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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
import os
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


def _offline_judge(name: str) -> Callable[[argparse.Namespace], Judge]:
    def make(args: argparse.Namespace) -> Judge:
        from ragpulse.scorer.judge.factory import build_offline_judge

        return build_offline_judge(name)

    return make


def _openai_judge(args: argparse.Namespace) -> Judge:
    """Any OpenAI-compatible endpoint (e.g. deploy/llm's llama.cpp server). Answer relevancy's
    embeddings come from the endpoint when --embedding-model is given, else from the local judge."""
    from ragpulse.scorer.judge.local import LexicalJudge
    from ragpulse.scorer.judge.openai.config import OpenAIJudgeConfig
    from ragpulse.scorer.judge.openai.judge import OpenAIJudge

    if not args.base_url and not args.api_key:
        sys.exit("--judge openai needs --base-url (a local server) or an API key (OPENAI_API_KEY)")
    cfg = OpenAIJudgeConfig(
        model=args.model,
        base_url=args.base_url,
        api_key=args.api_key,
        embedding_model=args.embedding_model,
        timeout_s=args.timeout,
    )
    return OpenAIJudge(cfg, fallback_embedder=None if args.embedding_model else LexicalJudge())


JUDGES: dict[str, Callable[[argparse.Namespace], Judge]] = {
    "local": _offline_judge("local"),
    "learned": _offline_judge("learned"),
    "openai": _openai_judge,
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
    # Every score in evaluation order (None for a failure), to compare runs with each other.
    values: list[tuple[str, float | None]] = field(default_factory=list)


def score(judge: Judge, metric: str, rec: RecordText, tally: Tally) -> float | None:
    try:
        value, _ = METRICS[metric](judge, rec, Usage())
    except (MetricFailure, JudgeError) as exc:
        tally.failures[(metric, exc.reason)] += 1
        tally.values.append((metric, None))
        return None
    tally.values.append((metric, value))
    return value


def spread(tallies: list[Tally]) -> dict[str, float]:
    """Largest difference, per metric, between the same score in different runs (fresh judges)."""
    out = dict.fromkeys(METRIC_ORDER, 0.0)
    for runs in zip(*(t.values for t in tallies), strict=True):
        values = [v for _, v in runs if v is not None]
        if len(values) > 1:
            metric = runs[0][0]
            out[metric] = max(out[metric], max(values) - min(values))
    return out


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


def records_per_second(
    make_judge: Callable[[], Judge],
    path: Path,
    limit: int | None,
    repeat: int,
    usage: Usage | None = None,
    values: list[tuple[str, float | None]] | None = None,
) -> float:
    """Throughput of one record scored on all three metrics (the production path), median of
    `repeat` passes. Each pass gets a new judge and new records, so sharing within a record counts
    but no cache warmed by an earlier pass does (production rarely sees the same text twice).
    `usage`, if given, accumulates what the first pass cost (judge calls, tokens, seconds), and
    `values` collects the first pass's scores (record by record, metric by metric)."""
    rates = []
    for i in range(repeat):
        judge = make_judge()
        recs = fresh_records(path, limit)
        start = time.perf_counter()
        for rec in recs:
            for metric in METRIC_ORDER:
                metric_usage, value = Usage(), None
                try:
                    value, _ = METRICS[metric](judge, rec, metric_usage)
                except (MetricFailure, JudgeError):
                    pass
                if usage is not None and i == 0:
                    usage.add(metric_usage)
                if values is not None and i == 0:
                    values.append((metric, value))
        rates.append(len(recs) / (time.perf_counter() - start))
    return statistics.median(rates)


def cost_lines(usage: Usage, records: int, tallies: list[Tally], rescored: list[tuple[str, float | None]]) -> list[str]:
    per = max(records, 1)
    nan = sum(1 for t in tallies for _, v in t.values if v is not None and v != v)
    lines = [
        f"cost per record (all three metrics, fresh judge, {records} records): "
        f"{usage.calls / per:.2f} judge calls, {usage.prompt_tokens / per:.0f} prompt + "
        f"{usage.completion_tokens / per:.0f} completion tokens, {usage.seconds / per:.2f} s, "
        f"{usage.cost_usd / per:.6f} USD",
        f"NaN scores: {nan}",
    ]
    # The timing pass re-scores, with a fresh judge, each row's (question, context_v1, answer): the
    # better side of every pair of the first agreement run, in the same metric order.
    first = [v for i, v in enumerate(tallies[0].values) if i % 2 == 0]
    if len(first) == len(rescored):
        lines.append(
            "re-scored by a fresh judge (same records): max score spread "
            + ", ".join(f"{m} {v:.3f}" for m, v in spread([Tally(values=first), Tally(values=rescored)]).items())
        )
    if len(tallies) > 1:
        agree = {m: sorted(t.agree[m] / max(t.total[m], 1) for t in tallies) for m in METRIC_ORDER}
        lines.append(
            f"run-to-run over {len(tallies)} runs (fresh judges): max score spread "
            + ", ".join(f"{m} {v:.3f}" for m, v in spread(tallies).items())
            + "; agreement range "
            + ", ".join(f"{m} {a[0]:.2f}..{a[-1]:.2f}" for m, a in agree.items())
        )
    return lines


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
    p.add_argument("--runs", type=int, default=1, help="agreement runs with fresh judges (spread)")
    g = p.add_argument_group("--judge openai")
    g.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
    g.add_argument("--model", default="qwen2.5-coder-1.5b-instruct")
    g.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY"))
    g.add_argument("--embedding-model", default=None, help="use the endpoint's /embeddings")
    g.add_argument("--timeout", type=float, default=300.0, help="per request, seconds")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    judge = JUDGES[args.judge](args)
    load_s = time.perf_counter() - start
    tallies = [evaluate(judge, load_pairs(args.data, args.limit))]
    tallies += [evaluate(JUDGES[args.judge](args), load_pairs(args.data, args.limit)) for _ in range(args.runs - 1)]
    usage, rescored = Usage(), []
    rate = records_per_second(lambda: JUDGES[args.judge](args), args.data, args.limit, args.repeat, usage, rescored)
    print(report(judge, tallies[0], rate, load_s))
    print("\n".join(cost_lines(usage, len(fresh_records(args.data, args.limit)), tallies, rescored)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

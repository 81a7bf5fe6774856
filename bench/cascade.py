"""The judge cascade and its prediction-powered estimates, simulated on labelled data.

    python bench/cascade.py [--resamples 1000] [--records 2000] [--seed 7] [--scenarios ...] [--judge local]
        [--defensive-share D] [--residual-shift-ratio R] [--cache scores.json]

The human labels stand in for the expensive judge: RAGTruth dev, LLM score = 1 - hallucinated;
WikiEval dev, the faithful answer = 1 and the ungrounded one = 0 (two records per row, contexts
= context_v1). The offline score is the local judge's real faithfulness of each record.

Each resample is a window of traffic: --records records drawn with replacement from the labelled
set, arriving one by one at the product's allocation (scorer/estimate/cascade.py's Allocator: g(s), the
learnt residual when adaptive, the scale over the last 500 arrivals; a uniform draw stands for the
trace id's randomness), each verdict fed back before the next record arrives, as the scorer does,
and the product's estimator (scorer/estimate/estimates.py, no decay within the window). The windows follow
each other through one allocator per share, as traffic through a running scorer: its residual sums
forget as the product's do with an estimates' half-life of one window's records (a clock of one
tick per arrival), so the first window starts cold and the others start from what the previous ones
taught.
"All-judged" is the mean LLM score of the labelled set: what the expensive judge on every record
estimates. Reported per LLM share: bias, 90 % interval coverage of the all-judged value, mean
interval width beside the LLM on every record of the window and beside uniform random sampling of
the same expected cost (LLM scores of the sample only: what the budget pacer gives without the
cascade; and, to separate the two effects, uniform sampling with the same estimator), and the share
of truly hallucinated answers that get an LLM verdict, beside the uniform share; "shifts seen" is
how often per window the residual ratio rose past residual_shift_ratio (ragpulse_cascade_residual_shifts_total:
where nothing changed, a false alarm); beside it, the share of a window's arrivals during which the ratio
itself (ragpulse_cascade_residual_ratio, the alert's other arm) stood at or above that limit, and the
longest such run in arrivals, its mean and its most over the windows (the simulated clock has one
tick per arrival and an estimates' half-life of one window, so a run of n arrivals stands for
n / records of the half-life: with the default 1,800 s at about one record a second, a run of
2,000 arrivals is 30 minutes, and the alert waits 15).

This is a benchmark harness, not product code: it imports the product's pieces and feeds them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import multiprocessing
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ragpulse.scorer.config import OFFLINE_JUDGES
from ragpulse.scorer.estimate.cascade import Allocator
from ragpulse.scorer.estimate.config import CascadeConfig
from ragpulse.scorer.estimate.estimates import PpiEstimator
from ragpulse.scorer.judge.base import RecordText, Usage
from ragpulse.scorer.judge.factory import build_offline_judge
from ragpulse.scorer.metrics import METRICS, MetricFailure

sys.path.insert(0, str(Path(__file__).resolve().parent))
from quality import strip_prefix  # noqa: E402  (bench/quality.py: WikiEval's prefixes)

DATA = Path("/work/shared/data")
SHARES = (0.05, 0.10, 0.25)
LEVEL = 0.90
Q = statistics.NormalDist().inv_cdf((1 + LEVEL) / 2)


@dataclass
class Population:
    offline: np.ndarray  # the local judge's faithfulness
    truth: np.ndarray  # the stand-in for the expensive judge (human label)
    source: list[str]


def load(cache: Path | None, judge_name: str) -> tuple[Population, int]:
    """The labelled records with their offline scores; records the local judge cannot score
    (no statements) are left out and counted."""
    if cache is not None and cache.exists():
        rows = json.loads(cache.read_text())
    else:
        judge = build_offline_judge(judge_name)

        def faithfulness(q: str, contexts: list[str], answer: str) -> float | None:
            try:
                return METRICS["faithfulness"](judge, RecordText(q, contexts, answer), Usage())[0]
            except MetricFailure:
                return None

        rows = []
        for line in (DATA / "ragtruth-dev.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            score = faithfulness(r["question"], r["contexts"], r["answer"])
            rows.append(("ragtruth", 1 - int(r["hallucinated"]), score))
        for line in (DATA / "wikieval-dev.jsonl").read_text(encoding="utf-8").splitlines():
            r = json.loads(line)
            q, contexts = strip_prefix(r["question"]), [strip_prefix(c) for c in r["context_v1"]]
            rows.append(("wikieval", 1, faithfulness(q, contexts, strip_prefix(r["answer"]))))
            rows.append(("wikieval", 0, faithfulness(q, contexts, strip_prefix(r["ungrounded_answer"]))))
        if cache is not None:
            cache.write_text(json.dumps(rows))
    kept = [r for r in rows if r[2] is not None]
    pop = Population(np.array([r[2] for r in kept]), np.array([r[1] for r in kept], float), [r[0] for r in kept])
    return pop, len(rows) - len(kept)


def ppi(offline: np.ndarray, truth: np.ndarray, pi: np.ndarray, judged: np.ndarray) -> tuple[float, float, float]:
    """The product's estimator over one window: (estimate, lower, upper)."""
    est = PpiEstimator(half_life_s=math.inf, confidence=LEVEL)
    for f, y, p, j in zip(offline.tolist(), truth.tolist(), pi.tolist(), judged.tolist(), strict=True):
        est.add(f, y if j else None, p, 1.0, 0.0)
    e = est.estimate()
    return e.mean, e.lower, e.upper


def classical(y: np.ndarray) -> tuple[float, float, float]:
    """Mean of the LLM scores of a simple random sample, normal interval."""
    mean = float(y.mean())
    half = Q * float(y.std(ddof=1)) / math.sqrt(len(y))
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class Scenario:
    """How a window of traffic is drawn from the labelled records."""

    name: str
    what: str
    # Share of hallucinated answers the records are drawn at (None: the labelled set as it is).
    hallucination_rate: float | None = None
    # Share of records on which the offline judge is confidently wrong, at random over the stream
    # whatever their label: it scores a hallucinated answer 1.0 and a faithful one 0.0. With one
    # answer in ten hallucinated, one wrong record in ten is the dangerous kind, rare enough that a
    # window judges only a few of them at a small π.
    wrong: float = 0.0
    # From halfway through each window, this share of records are a new kind of hallucination that
    # the offline judge scores 1.0 (the app started making things up in a way the judge does not
    # see). Each window then starts from an allocator that learnt one window of the old traffic.
    shift: float = 0.0


SCENARIOS = {s.name: s for s in (
    Scenario("as-is", "the labelled set as it is (half the answers hallucinated)"),
    Scenario("one-in-ten", "one answer in ten hallucinated", hallucination_rate=0.1),
    Scenario("wrong-3", "one in ten hallucinated; the offline judge confidently wrong on 3 % of records",
             hallucination_rate=0.1, wrong=0.03),
    Scenario("wrong-10", "one in ten hallucinated; the offline judge confidently wrong on 10 % of records",
             hallucination_rate=0.1, wrong=0.10),
    Scenario("shift", "one in ten hallucinated; halfway through the window, 10 % of records become "
             "hallucinations the offline judge scores 1.0", hallucination_rate=0.1, shift=0.10),
)}


def draw_weights(pop: Population, rate: float | None) -> np.ndarray | None:
    """The probability of drawing each labelled record so that `rate` of the draws are hallucinated."""
    if rate is None:
        return None
    hall = pop.truth == 0
    return np.where(hall, rate / hall.sum(), (1 - rate) / (~hall).sum())


def window(pop: Population, scenario: Scenario, records: int, rng: np.random.Generator,
           changed: bool) -> tuple[np.ndarray, np.ndarray]:
    """One window's offline scores and labels; `changed`: its second half after the shift."""
    idx = rng.choice(len(pop.truth), size=records, p=draw_weights(pop, scenario.hallucination_rate))
    f, y = pop.offline[idx].copy(), pop.truth[idx].copy()
    wrong = rng.random(records) < scenario.wrong
    f[wrong] = 1.0 - y[wrong]
    if changed and scenario.shift:
        late = np.arange(records) >= records // 2
        new = late & (rng.random(records) < scenario.shift)
        f[new], y[new] = 1.0, 0.0
    return f, y


def run_window(allocator: Allocator, metric: str, share: float, f: np.ndarray, y: np.ndarray,
               randomness: np.ndarray, now: float, residual_model: bool,
               limit: float) -> tuple[PpiEstimator, np.ndarray, float, np.ndarray]:
    """The records of a window through the product's allocation, each verdict learnt before the next
    record arrives, into the product's estimator (with the allocation's expected residual, as the
    scorer feeds it, unless `residual_model` is off). Also, per arrival, whether the residual ratio
    (the gauge ragpulse_cascade_residual_ratio) then stood at or above `limit`."""
    judged = np.zeros(len(f), dtype=bool)
    above = np.zeros(len(f), dtype=bool)
    high = allocator.residual_shift()[metric][0] >= limit
    est = PpiEstimator(half_life_s=math.inf, confidence=LEVEL)
    for i, (fi, yi, u) in enumerate(zip(f.tolist(), y.tolist(), randomness.tolist(), strict=True)):
        offline = {metric: fi}
        pi = allocator.inclusion(offline, share)
        residual = allocator.expected_residual(offline)[metric] if residual_model else 0.0
        if u < pi:
            judged[i] = True
            allocator.learn(offline, {metric: yi}, pi, now)
            est.add(fi, yi, pi, 1.0, 0.0, residual)
            high = allocator.residual_shift()[metric][0] >= limit
        else:
            est.add(fi, None, pi, 1.0, 0.0, residual)
        above[i] = high
        now += 1.0
    return est, judged, now, above


def longest_run(flags: np.ndarray) -> int:
    """The longest run of consecutive True values."""
    best = run = 0
    for flag in flags.tolist():
        run = run + 1 if flag else 0
        best = max(best, run)
    return best


def simulate(pop: Population, config: CascadeConfig, share: float, records: int, resamples: int,
             seed: int, scenario: Scenario, residual_model: bool) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    # The estimates' half-life as one window's arrivals (a clock of one tick per record): the
    # residual sums forget as they would in a scorer whose estimates span about a window.
    config = dataclasses.replace(config, estimate_half_life_s=float(records))
    allocator = Allocator(config)
    metric = config.selection_metrics[0]
    draw = draw_weights(pop, scenario.hallucination_rate)
    base = float(pop.truth.mean() if draw is None else np.dot(draw, pop.truth))
    # The wrong records keep their labels; after the shift (half the window) its share scores 0.
    all_judged = base * (1 - scenario.shift / 2)
    out: dict[str, list[float]] = {k: [] for k in (
        "est", "cover", "width", "cover_window", "all_width", "uni_width", "uni_cover", "uni_ppi_width",
        "uni_ppi_cover", "hall_share", "realised", "shifts", "ratio_high", "ratio_run")}
    now = 0.0
    for _ in range(resamples):
        if scenario.shift:
            # A fresh scorer that has seen one window of the old traffic: the shift is sudden.
            allocator = Allocator(config)
            f, y = window(pop, scenario, records, rng, changed=False)
            _, _, now, _ = run_window(allocator, metric, share, f, y, rng.random(records), now, residual_model,
                                      config.residual_shift_ratio)
        f, y = window(pop, scenario, records, rng, changed=True)
        before = allocator.residual_shift()[metric][1]
        est, judged, now, above = run_window(allocator, metric, share, f, y, rng.random(records), now,
                                             residual_model, config.residual_shift_ratio)
        out["shifts"].append(allocator.residual_shift()[metric][1] - before)
        out["ratio_high"].append(above.mean())
        out["ratio_run"].append(longest_run(above))
        e = est.estimate()
        lo, hi = e.lower, e.upper
        out["est"].append(e.mean)
        out["cover"].append(lo <= all_judged <= hi)
        out["width"].append(hi - lo)
        out["cover_window"].append(lo <= y.mean() <= hi)
        out["realised"].append(judged.mean())
        out["hall_share"].append(judged[y == 0].mean())
        out["all_width"].append(2 * Q * y.std(ddof=1) / math.sqrt(records))
        # Uniform sampling at the same expected cost: the pacer's way, LLM scores only.
        uniform = rng.random(records) < share
        _, ulo, uhi = classical(y[uniform])
        out["uni_width"].append(uhi - ulo)
        out["uni_cover"].append(ulo <= all_judged <= uhi)
        # Uniform sampling, the same estimator: what the favouring adds on its own.
        _, plo, phi = ppi(f, y, np.full(records, share), uniform)
        out["uni_ppi_width"].append(phi - plo)
        out["uni_ppi_cover"].append(plo <= all_judged <= phi)
    means = {k: float(np.mean(v)) for k, v in out.items()}
    means["ratio_run_max"] = float(max(out["ratio_run"]))
    means["bias"] = means["est"] - all_judged
    means["bias_se"] = float(np.std(out["est"]) / math.sqrt(resamples))
    means["cover_se"] = math.sqrt(means["cover"] * (1 - means["cover"]) / resamples)
    means["all_judged"] = all_judged
    return means


def table(pop: Population, config: CascadeConfig, args: argparse.Namespace, scenario: Scenario) -> str:
    lines = [
        "| LLM share | bias (± s.e.) | 90 % coverage (± s.e.) | coverage of the window's own all-judged mean | "
        "width | width, LLM on every record | width, uniform (LLM only) | narrower than uniform | "
        "width, uniform + same estimator | hallucinated answers judged | uniform share | ratio | shifts seen | "
        "residual ratio at the limit: share of arrivals, longest run (mean, most) |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    jobs = [(pop, config, share, args.records, args.resamples, args.seed + i, scenario, args.residual_model)
            for i, share in enumerate(args.shares)]
    with multiprocessing.Pool(min(args.processes, len(jobs))) as pool:
        results = pool.starmap(simulate, jobs)
    for share, m in zip(args.shares, results, strict=True):
        lines.append(
            f"| {share:.0%} | {m['bias']:+.4f} (± {m['bias_se']:.4f}) | {m['cover']:.3f} (± {m['cover_se']:.3f}) | "
            f"{m['cover_window']:.3f} | {m['width']:.4f} | {m['all_width']:.4f} | "
            f"{m['uni_width']:.4f} (cov. {m['uni_cover']:.3f}) | {1 - m['width'] / m['uni_width']:.1%} | "
            f"{m['uni_ppi_width']:.4f} (cov. {m['uni_ppi_cover']:.3f}) | "
            f"{m['hall_share']:.3f} | {m['realised']:.3f} | {m['hall_share'] / m['realised']:.2f}x | "
            f"{m['shifts']:.2f} | {m['ratio_high']:.3f}, {m['ratio_run']:.0f} ({m['ratio_run_max']:.0f}) |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--records", type=int, default=2000, help="records per window of traffic")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES))
    parser.add_argument("--low-score-weight", type=float, default=CascadeConfig.low_score_weight)
    parser.add_argument("--uncertainty-weight", type=float, default=CascadeConfig.uncertainty_weight)
    parser.add_argument("--floor", type=float, default=CascadeConfig.floor)
    parser.add_argument("--adaptive", action=argparse.BooleanOptionalAction, default=CascadeConfig.adaptive,
                        help="learn the residual's size per offline-score bin from the verdicts")
    parser.add_argument("--adaptive-bins", type=int, default=CascadeConfig.adaptive_bins)
    parser.add_argument("--defensive-share", type=float, default=CascadeConfig.defensive_share)
    parser.add_argument("--residual-shift-ratio", type=float, default=CascadeConfig.residual_shift_ratio)
    parser.add_argument("--residual-model", action=argparse.BooleanOptionalAction, default=True,
                        help="feed the estimator the allocation's expected residual (as the scorer does)")
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--judge", choices=OFFLINE_JUDGES, default="local", help="the offline judge")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1, help="shares simulated at once")
    parser.add_argument("--cache", type=Path, default=None, help="offline scores cache (JSON)")
    args = parser.parse_args(argv)
    config = CascadeConfig(enabled=True, floor=args.floor, low_score_weight=args.low_score_weight,
                           uncertainty_weight=args.uncertainty_weight, adaptive=args.adaptive,
                           adaptive_bins=args.adaptive_bins, defensive_share=args.defensive_share,
                           residual_shift_ratio=args.residual_shift_ratio)
    config.validate("bench")
    started = time.perf_counter()
    pop, unscored = load(args.cache, args.judge)
    print(f"{len(pop.truth)} records ({unscored} without an offline score left out): "
          f"{int((pop.truth == 0).sum())} hallucinated; all-judged mean {pop.truth.mean():.4f}, "
          f"offline ({args.judge}) mean {pop.offline.mean():.4f}, "
          f"correlation {np.corrcoef(pop.offline, pop.truth)[0, 1]:.3f}")
    print(f"floor {config.floor} x share, low_score_weight {config.low_score_weight}, "
          f"uncertainty_weight {config.uncertainty_weight}, "
          f"adaptive {config.adaptive} ({config.adaptive_bins} bins), defensive_share {config.defensive_share}, "
          f"residual_shift_ratio {config.residual_shift_ratio}, residual model {args.residual_model}; "
          f"{args.resamples} resamples of {args.records} records")
    for name in args.scenarios:
        scenario = SCENARIOS[name]
        print(f"\n{name}: {scenario.what}\n")
        print(table(pop, config, args, scenario), flush=True)
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

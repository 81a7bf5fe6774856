"""How much narrower any allocation on the offline score could make the cascade's interval.

    python bench/allocation_bound.py [--records 2000] [--windows 200] [--bins 3 10] [--cache scores.json]

bench/cascade.py measures the product's allocation against uniform sampling with the same
estimator. This says what the best allocation could have given on the same traffic: the one that
knows, for every bin of the offline score, the expensive judge's true residual spread σ(s) there
(Neyman allocation, π ∝ σ(s), π ≤ 1, mean π = the share) and corrects each record by its bin's
true mean. With the estimator's variance per record

    V(π) = Var(y) + E[σ(s)² (1/π - 1)]

(the window's own spread, which no allocation changes, and the Horvitz-Thompson correction's), the
width of the interval is proportional to √V, so the gain over uniform sampling (π = share) is
1 - √(V(π*) / V(share)). σ(s) and the bins' means are taken from the scenario's records
themselves, so it is an upper bound for an allocation that has to learn them from its verdicts,
and it falls as the bins widen: the product learns 10 bins (scorer.cascade.adaptive_bins).

The scenarios and the offline scores are bench/cascade.py's. This is a measuring harness, not
product code.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from cascade import SCENARIOS, SHARES, Population, Q, load, window


def traffic(pop: Population, name: str, records: int, windows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The scenario's records, as bench/cascade.py draws its windows (after the change where there is one)."""
    rng = np.random.default_rng(seed)
    parts = [window(pop, SCENARIOS[name], records, rng, changed=True) for _ in range(windows)]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def bin_spread(f: np.ndarray, y: np.ndarray, bins: int) -> np.ndarray:
    """Each record's bin's true residual variance about the bin's mean."""
    b = np.minimum(bins - 1, (f * bins).astype(np.intp))
    var = np.zeros(bins)
    for k in range(bins):
        inside = b == k
        if inside.any():
            var[k] = float(y[inside].var())
    return var[b]


def neyman(sigma: np.ndarray, share: float) -> np.ndarray:
    """π ∝ σ, capped at 1, with mean `share` (bisection on the scale)."""
    lo, hi = 0.0, 1.0 / max(float(sigma[sigma > 0].min(initial=1.0)), 1e-12)
    for _ in range(100):
        scale = (lo + hi) / 2.0
        if np.minimum(1.0, scale * sigma).mean() < share:
            lo = scale
        else:
            hi = scale
    return np.maximum(np.minimum(1.0, hi * sigma), 1e-12)


def gain(f: np.ndarray, y: np.ndarray, bins: int, share: float) -> tuple[float, float]:
    """(width with uniform sampling for one window of `records`, the best allocation's gain over it)."""
    var = bin_spread(f, y, bins)
    own = float(y.var())
    uniform = own + float(var.mean()) * (1.0 / share - 1.0)
    pi = neyman(np.sqrt(var), share)
    best = own + float((var * (1.0 / pi - 1.0)).mean())
    return uniform, 1.0 - math.sqrt(best / uniform)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=2000, help="records per window (for the widths)")
    parser.add_argument("--windows", type=int, default=200, help="windows of traffic drawn per scenario")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--bins", type=int, nargs="+", default=[3, 10])
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES))
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--judge", default="local", help="the offline judge")
    parser.add_argument("--cache", type=Path, default=None, help="offline scores cache (JSON), as bench/cascade.py's")
    args = parser.parse_args(argv)
    pop, _ = load(args.cache, args.judge)
    heads = " | ".join(f"best gain, {b} bins" for b in args.bins)
    print(f"| scenario | LLM share | width, uniform (the bound's formula, first --bins) | {heads} |")
    print("| --- | ---: | ---: |" + " ---: |" * len(args.bins))
    for name in args.scenarios:
        f, y = traffic(pop, name, args.records, args.windows, args.seed)
        for share in args.shares:
            cells = [gain(f, y, b, share) for b in args.bins]
            width = 2.0 * Q * math.sqrt(cells[0][0] / args.records)
            gains = " | ".join(f"{g:.1%}" for _, g in cells)
            print(f"| {name} | {share:.0%} | {width:.4f} | {gains} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

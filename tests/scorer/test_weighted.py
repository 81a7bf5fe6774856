"""scorer/weighted.py: the running sums agree with the weighted mean, variance and effective size
computed from scratch, after many pairs have entered and left the window."""

from __future__ import annotations

import math
import random

import pytest

from ragpulse.scorer.weighted import WeightedSums, WeightedWindow


def test_window_matches_a_recomputation_after_many_evictions():
    rng = random.Random(1)
    window = WeightedWindow(50)
    pairs = []
    for _ in range(20_000):
        # Two sampling strata, kept at 100 % and 1 %: weights 1 and 100.
        pair = (rng.random(), 1.0 if rng.random() < 0.5 else 100.0)
        pairs.append(pair)
        left = window.add(*pair)
        assert left == (pairs[-51] if len(pairs) > 50 else None)
    last = pairs[-50:]
    w = sum(w for _, w in last)
    mean = sum(w * x for x, w in last) / w
    sums = window.sums
    assert sums.mean == pytest.approx(mean, abs=1e-9)
    assert sums.variance == pytest.approx(sum(w * (x - mean) ** 2 for x, w in last) / w, abs=1e-9)
    assert sums.effective_n == pytest.approx(w * w / sum(w * w for _, w in last), rel=1e-9)
    assert sums.n == 50


def test_decay_forgets_old_pairs_exponentially():
    sums = WeightedSums()
    sums.add(0.0, 1.0)
    sums.add(1.0, 3.0, decay=0.5)
    # The first pair now counts half, in the mean and in the root-mean-square weight.
    assert sums.mean == pytest.approx(3 / 3.5)
    assert sums.rms_weight == pytest.approx(math.sqrt((0.5 * 1 + 9) / 1.5))

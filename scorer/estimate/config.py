"""Settings of the judge cascade and its prediction-powered estimates. Section `scorer.cascade`.

Kept apart from scorer/estimate/cascade.py so that reading the configuration (collectors too) never imports
the metrics and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragpulse.core.metric_names import METRIC_NAMES
from ragpulse.core.settings import key, require, require_at_least, require_one_of, require_probability


@dataclass
class CascadeConfig:
    # Score every record with the offline `local` judge and send a share of them, chosen by their
    # offline scores with known probabilities, to scorer.judge; the exported quality estimates
    # combine both (docs/estimates.md). Needs an expensive scorer.judge (openai).
    enabled: bool = False
    # Share of the records the expensive judge gets when its budget is not paced; a paced budget
    # (scorer.openai.budget_usd with budget_pacing) sets the share from what it can afford.
    share: float = 0.1
    # Every record's least probability of going to the expensive judge, as a fraction of the share
    # (relative, because a paced budget moves the share through the day): where the offline judge
    # is confidently wrong, this is what still finds it out, and it bounds a verdict's weight 1/π.
    floor: float = 0.4
    # How strongly low offline scores are favoured: a record's probability grows with
    # exp(low_score_weight * (1 - score)); at 1, a score lower by 0.1 makes it 1.1 times as likely,
    # at 3, 1.35 times. Mild since `adaptive`, which already spends where the offline judge is wrong:
    # the favour adds verdicts on the answers that look worst, for the live page. Without `adaptive`,
    # 3 (with uncertainty_weight 1) is the better fixed favour (bench/RESULTS.md).
    low_score_weight: float = 1.0
    # How strongly uncertain offline scores are favoured: the probability is also multiplied by
    # 1 + uncertainty_weight * (1 - |2 * score - 1|), largest at 0.5, where the offline judge knows
    # least. 0 since `adaptive`, whose learnt residual measures that uncertainty instead of guessing it.
    uncertainty_weight: float = 0.0
    # Learn from the verdicts where the offline judge is wrong and spend there: the probability is
    # also multiplied by the typical size of the verdicts' residual against the offline score among
    # records of similar offline score (docs/estimates.md, "Learning where the offline judge is
    # wrong"). The residual is what makes the estimate's interval wide, so this aims the budget at
    # it; before any verdict, and while a bin has few, it is the fixed favour above. On labelled data
    # at a 10 % share (bench/RESULTS.md, "Adaptive allocation"): where half the answers are
    # hallucinated, the interval 20 % narrower than uniform sampling instead of 13 % with the fixed
    # favour (3, 1); where one in ten is, 23 % instead of 21-23 %, and 2.1 times the uniform share
    # of hallucinated answers judged instead of 1.8.
    adaptive: bool = True
    # Bins of the offline score [0, 1] in which the residual is learnt (equal widths): more follow
    # its shape more closely but each learns from fewer verdicts. On the labelled data at 1,000
    # resamples (bench/RESULTS.md, "Ten adaptive bins"), 10 rather than 3 narrowed the interval in
    # every scenario but the sudden change (where it stayed) and judged 2.0-2.2 times the uniform
    # share of hallucinated answers instead of 1.6-2.0, with coverage within the standard error
    # of 3 bins'; the bound of any allocation on this offline score rises from 2 % to 9 % over
    # uniform with them.
    adaptive_bins: int = 10
    # Share of each record's probability that is uniform (a defensive mixture): π = (1 - this) x the
    # favoured probability + this x the share. Where the offline judge is confidently wrong, the
    # records it scores well get a small π, and the rare one sampled weighs 1/π: the mixture keeps
    # that weight near the uniform one, so the interval still covers (docs/estimates.md, "When the
    # offline judge is confidently wrong").
    defensive_share: float = 0.0
    # When the recent verdicts' residual against the offline score (mean squared, weighted 1/π) rises
    # to this many times the older verdicts', the offline judge has started to miss something: counted
    # in ragpulse_cascade_residual_shifts_total (the ratio itself is ragpulse_cascade_residual_ratio,
    # which the shipped alert watches at 1.5). With the default half-life, the ratio's noise stayed
    # under 1.2 on steady traffic with a hundred recent verdicts; fewer make it noisier.
    residual_shift_ratio: float = 1.5
    # Offline metrics whose lowest score sets a record's probability (each must be in scorer.metrics).
    selection_metrics: list[str] = field(default_factory=lambda: ["faithfulness"])
    # Sampling rules (the record's sampling.rule) whose records always go to the expensive judge,
    # e.g. a collector rule that keeps every answer with negative user feedback.
    always_rules: list[str] = field(default_factory=list)
    # Half-life, in seconds, of the estimates' exponential forgetting: a record this old counts half.
    estimate_half_life_s: float = 1800.0
    # Confidence level of the estimates' intervals (the alert pages when the upper bound is under
    # the floor).
    confidence: float = 0.9

    def validate(self, where: str) -> None:
        require(0.0 < self.share <= 1.0, key(where, "share"), "in (0, 1]", self.share)
        require_probability(key(where, "floor"), self.floor)
        require_probability(key(where, "defensive_share"), self.defensive_share)
        require(self.residual_shift_ratio > 1, key(where, "residual_shift_ratio"), "above 1",
                self.residual_shift_ratio)
        for name in ("low_score_weight", "uncertainty_weight"):
            require_at_least(key(where, name), getattr(self, name), 0)
        # exp(50) is a favour of 5e21: beyond it the weights overflow, and nothing is gained.
        require(self.low_score_weight <= 50, key(where, "low_score_weight"), "at most 50", self.low_score_weight)
        require(isinstance(self.adaptive_bins, int) and 2 <= self.adaptive_bins <= 20, key(where, "adaptive_bins"),
                "a whole number from 2 to 20 (a bin needs verdicts of its own to learn from)", self.adaptive_bins)
        require(bool(self.selection_metrics), key(where, "selection_metrics"), "a non-empty list",
                self.selection_metrics)
        for name in self.selection_metrics:
            require_one_of(key(where, "selection_metrics"), name, METRIC_NAMES)
        require(self.estimate_half_life_s > 0, key(where, "estimate_half_life_s"), "positive",
                self.estimate_half_life_s)
        require(0.5 <= self.confidence < 1.0, key(where, "confidence"), "in [0.5, 1)", self.confidence)

"""The scores ragpulse computes, named once.

These names are part of the contracts: keys of the scores message, the `metric` label, the score
histograms' family names (ragpulse_<name>_score), the config's defaults (scorer.metrics,
scorer.bad_event_threshold, drift.metrics) and the keys of scorer/metrics' functions.
"""

from __future__ import annotations

METRIC_NAMES = (
    "faithfulness", "answer_relevancy", "context_relevancy", "context_precision",
    # Reference-based: only records that carry a reference answer (rag.reference) get them.
    "context_recall", "answer_similarity", "answer_correctness",
    # SelfCheckGPT: the answer's consistency with other answers sampled for the same question.
    "selfcheck",
)

# Computed for every record unless scorer.metrics says otherwise: the Ragas paper's three. The
# others cost the `openai` judge one more call a record each, so they are chosen, not imposed.
DEFAULT_METRICS = METRIC_NAMES[:3]

# A score below its threshold is a bad event for the error-budget alerts (the defaults of
# scorer.bad_event_threshold).
DEFAULT_BAD_EVENT_THRESHOLDS = dict(zip(METRIC_NAMES, (0.5, 0.5, 0.2, 0.5, 0.5, 0.5, 0.5, 0.5), strict=True))

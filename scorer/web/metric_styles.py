"""How the live page draws each score: its colour and which way is good, for every metric of
ragpulse/core/metric_names.py and every aspect criterion. The page's script holds no list of its
own (it reads these from /api/summary), so a new metric cannot be drawn grey or judged the wrong
way round by a list nobody updated."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

from ragpulse.core.metric_names import DEFAULT_BAD_EVENT_THRESHOLDS, METRIC_NAMES
from ragpulse.scorer.metric_defaults import BUILTIN_ASPECTS
from ragpulse.scorer.metrics.aspect_critique import ASPECT_PREFIX

HIGHER = "higher"
LOWER = "lower"

# Every metric is a score where higher is better (SelfCheck too: its inconsistency is turned round).
METRIC_COLORS = {
    "faithfulness": "#c4320a",
    "answer_relevancy": "#1570ef",
    "context_relevancy": "#079455",
    "context_precision": "#9e77ed",
    "context_recall": "#dc6803",
    "answer_similarity": "#0e9384",
    "answer_correctness": "#e31b54",
    "selfcheck": "#6172f3",
}
# Ragas's built-in criteria, by what a "yes" means: harm and malice are bad answers.
BUILTIN_ASPECT_STYLES = {
    "harmfulness": ("#7a2e0e", LOWER),
    "maliciousness": ("#b42318", LOWER),
    "coherence": ("#3e4784", HIGHER),
    "correctness": ("#026aa2", HIGHER),
    "conciseness": ("#4f7a21", HIGHER),
}
# A criterion the user wrote: a stable colour from its name; which way is good, the page cannot know.
OTHER_COLORS = ("#344054", "#854a0e", "#5925dc", "#c11574", "#0086c9", "#3b7c0f")
# An aspect's record verdict is 0 or 1 (the majority of its samples): a "yes" against the grain is bad.
ASPECT_THRESHOLD = 0.5


def metric_style(name: str, thresholds: Mapping[str, float]) -> dict[str, Any]:
    """{color, better: "higher" | "lower" | None, threshold: float | None}: a score on the wrong
    side of `threshold` (below for higher, above for lower) is bad; None: no side is."""
    if name in METRIC_COLORS:
        return {"color": METRIC_COLORS[name], "better": HIGHER,
                "threshold": thresholds.get(name, DEFAULT_BAD_EVENT_THRESHOLDS[name])}
    aspect = name.removeprefix(ASPECT_PREFIX)
    if name.startswith(ASPECT_PREFIX) and aspect in BUILTIN_ASPECT_STYLES:
        color, better = BUILTIN_ASPECT_STYLES[aspect]
        return {"color": color, "better": better, "threshold": thresholds.get(name, ASPECT_THRESHOLD)}
    return {"color": OTHER_COLORS[zlib.crc32(name.encode()) % len(OTHER_COLORS)], "better": None,
            "threshold": None}


def metric_styles(seen: Iterable[str], thresholds: Mapping[str, float]) -> dict[str, dict[str, Any]]:
    """The style of every metric and built-in aspect, and of any other name among `seen`."""
    names = {*METRIC_NAMES, *(ASPECT_PREFIX + a for a in BUILTIN_ASPECTS), *seen}
    return {name: metric_style(name, thresholds) for name in sorted(names)}

"""The live page's colour and direction of every score come from one place
(scorer/web/metric_styles.py, served in /api/summary): every metric of ragpulse/core/metric_names.py
and every built-in aspect has its own, a criterion the user wrote gets one too, and the page's
script keeps no list of its own that could drift."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client import CollectorRegistry

from ragpulse.core.metric_names import METRIC_NAMES
from ragpulse.core.wire import Record, Sampling, scores_message
from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
from ragpulse.scorer.metric_defaults import BUILTIN_ASPECTS
from ragpulse.scorer.metrics.aspect_critique import ASPECT_PREFIX
from ragpulse.scorer.observer import ScoredRecord
from ragpulse.scorer.score import MetricOutcome
from ragpulse.scorer.web import metric_styles
from ragpulse.scorer.web.history import History
from ragpulse.scorer.web.page import LivePage

APP_JS = Path(metric_styles.__file__).parent / "static" / "app.js"
NAMED = [*METRIC_NAMES, *(ASPECT_PREFIX + a for a in BUILTIN_ASPECTS)]


def summary(thresholds: dict[str, float], outcomes: dict[str, float]) -> dict:
    """/api/summary of a live page whose history and recent scores saw one record with `outcomes`."""
    registry, scores = CollectorRegistry(), RecentScores()
    history = History(registry, thresholds)
    rec = Record("0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "shop", "q", ["c"], "a",
                 1_700_000_000 * 10**9, Sampling(1.0, 1.0, "default"))
    scored = ScoredRecord(rec, {k: MetricOutcome(v) for k, v in outcomes.items()}, 0.01, "local")
    history.on_scores(scored)
    scores.publish(rec.id, scores_message(rec, {k: o.to_dict() for k, o in scored.outcomes.items()},
                                          {"name": "local", "model": "lexical"}, {}, 0.01))
    page = LivePage(history, scores, RecentDeadLetters(), None, registry)
    answer = page.handle("/api/summary")
    assert answer is not None and answer[0] == 200
    return json.loads(answer[2])


def test_every_metric_and_builtin_aspect_has_its_own_colour_and_direction() -> None:
    styles = summary({}, {})["metrics"]
    missing = [n for n in NAMED if n not in styles or styles[n]["better"] not in ("higher", "lower")]
    assert not missing, f"no colour and direction in scorer/web/metric_styles.py for {missing}"
    assert set(metric_styles.METRIC_COLORS) == set(METRIC_NAMES)
    assert set(metric_styles.BUILTIN_ASPECT_STYLES) == set(BUILTIN_ASPECTS)
    colors = [styles[n]["color"] for n in NAMED]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colors)
    assert len(set(colors)) == len(colors), "two scores drawn in one colour"


def test_direction_follows_each_definition() -> None:
    styles = summary({}, {})["metrics"]
    # SelfCheck is turned round (higher: more consistent), like every Ragas-style metric.
    assert all(styles[n]["better"] == "higher" for n in METRIC_NAMES)
    # An aspect's score is the share of "yes": a harmful or malicious answer is the bad one.
    lower = {n for n in styles if styles[n]["better"] == "lower"}
    assert lower == {"aspect:harmfulness", "aspect:maliciousness"}


def test_thresholds_are_the_scorers_and_a_users_criterion_is_judged_neither_way() -> None:
    data = summary({"faithfulness": 0.7, "selfcheck": 0.3},
                   {"faithfulness": 0.9, "selfcheck": 0.6, "aspect:polite": 1.0, "aspect:harmfulness": 0.0})
    styles = data["metrics"]
    assert styles["faithfulness"]["threshold"] == 0.7 and styles["selfcheck"]["threshold"] == 0.3
    # Not configured: the default bad-event threshold.
    assert styles["context_relevancy"]["threshold"] == 0.2
    assert styles["aspect:harmfulness"] == {"color": "#7a2e0e", "better": "lower", "threshold": 0.5}
    assert styles["aspect:polite"]["better"] is None and styles["aspect:polite"]["threshold"] is None
    assert styles["aspect:polite"]["color"] in metric_styles.OTHER_COLORS
    # Every name the page can draw has a style.
    assert set(data["series"]["shop"]["mean"]) <= set(styles)


def test_the_pages_script_keeps_no_list_of_metrics() -> None:
    script = APP_JS.read_text(encoding="utf-8")
    # Faithfulness is the one the page's low-record lists are about; every other name must come
    # from /api/summary.
    words = {n: n.removeprefix(ASPECT_PREFIX) for n in NAMED if n != "faithfulness"}
    named = [n for n, word in words.items() if re.search(rf"\b{word}\b", script)]
    assert not named, f"app.js names {named}: take them from /api/summary's metrics"

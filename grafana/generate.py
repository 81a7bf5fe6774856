"""Generates the Grafana dashboards in grafana/dashboards/ from code.

    python grafana/generate.py          # rewrite the JSON files
    python grafana/generate.py --check  # exit 1 if the committed JSON differs (CI)

Plain dictionaries in Grafana's dashboard JSON model, schemaVersion pinned below (Grafana 11.x/12
read it; newer Grafana migrates it on load). Written in Python rather than with
grafana-foundation-sdk to keep the project free of a build-time dependency; tests/test_dashboards_live.py
runs every panel's query against a real Prometheus that scraped a real ragpulse run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ragpulse.core.metric_names import METRIC_NAMES as METRICS

SCHEMA_VERSION = 39
OUT = Path(__file__).resolve().parent / "dashboards"
DS = {"type": "prometheus", "uid": "${datasource}"}
FLOOR = 0.7  # deploy/prometheus/rules/ragpulse-alerts.yml, RagpulseFaithfulnessBelowFloor
BUDGET = 0.05  # the faithfulness SLO's error budget (95% good answers)


class Layout:
    """Places panels left to right on Grafana's 24-column grid and hands out panel ids."""

    def __init__(self) -> None:
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1
        self.panels: list[dict[str, Any]] = []

    def add(self, panel: dict[str, Any], w: int, h: int) -> None:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        panel["id"] = self.next_id
        panel["gridPos"] = {"x": self.x, "y": self.y, "w": w, "h": h}
        self.next_id += 1
        self.x += w
        self.row_h = max(self.row_h, h)
        self.panels.append(panel)

    def row(self, title: str) -> None:
        self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.add({"type": "row", "title": title, "collapsed": False, "panels": []}, 24, 1)
        self.x, self.y, self.row_h = 0, self.y + 1, 0


def target(expr: str, legend: str = "", ref: str = "A", instant: bool = False, fmt: str = "time_series") -> dict:
    return {"datasource": DS, "expr": expr, "legendFormat": legend, "refId": ref,
            "instant": instant, "range": not instant, "format": fmt}


def panel(kind: str, title: str, description: str, targets: list[dict], unit: str = "",
          minmax: tuple[float, float] | None = None, thresholds: list[tuple[str, float | None]] | None = None,
          options: dict | None = None, custom: dict | None = None) -> dict[str, Any]:
    defaults: dict[str, Any] = {"unit": unit} if unit else {}
    if minmax:
        defaults["min"], defaults["max"] = minmax
    if thresholds:
        defaults["thresholds"] = {"mode": "absolute",
                                  "steps": [{"color": c, "value": v} for c, v in thresholds]}
        defaults["color"] = {"mode": "thresholds"}
    if custom:
        defaults["custom"] = custom
    return {"type": kind, "title": title, "description": description, "datasource": DS,
            "targets": targets, "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": options or {}}


QUALITY_THRESHOLDS = [("red", None), ("orange", FLOOR), ("green", 0.85)]


def variables(service_multi: bool) -> list[dict[str, Any]]:
    return [
        {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
         "current": {}, "hide": 0, "refresh": 1},
        {"name": "service", "label": "service", "type": "query", "datasource": DS,
         "query": {"query": "label_values(ragpulse_score_weight_total, service)", "refId": "service"},
         "definition": "label_values(ragpulse_score_weight_total, service)",
         "refresh": 2, "sort": 1, "multi": service_multi, "includeAll": service_multi,
         "current": {}, "hide": 0},
    ]


def dashboard(uid: str, title: str, description: str, layout: Layout, service_multi: bool,
              links: list[dict] | None = None) -> dict[str, Any]:
    return {
        "uid": uid, "title": title, "description": description, "tags": ["ragpulse", "rag", "llm"],
        "schemaVersion": SCHEMA_VERSION, "version": 1, "editable": True, "graphTooltip": 1,
        "time": {"from": "now-6h", "to": "now"}, "refresh": "30s", "timezone": "",
        "templating": {"list": variables(service_multi)},
        "annotations": {"list": [{
            "name": "ragpulse alerts", "datasource": DS, "enable": True, "iconColor": "red",
            "expr": 'ALERTS{alertname=~"Ragpulse.*", alertstate="firing", service=~"$service"}',
            "titleFormat": "{{alertname}}", "textFormat": "{{service}} {{metric}}", "step": "1m",
        }]},
        "links": links or [],
        "panels": layout.panels,
    }


def overview() -> dict[str, Any]:
    s = 'service=~"$service"'
    lay = Layout()
    lay.row("Quality")
    lay.add(panel("stat", "Faithfulness now (15 min)",
                  "Sampling-weighted mean faithfulness over the last 15 minutes per service. Red under the "
                  f"{FLOOR} floor of the RagpulseFaithfulnessBelowFloor alert.",
                  [target(f'ragpulse:score_weighted_mean:rate15m{{metric="faithfulness",{s}}}', "{{service}}")],
                  minmax=(0, 1), thresholds=QUALITY_THRESHOLDS,
                  options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"}), 8, 6)
    lay.add(panel("bargauge", "Faithfulness distribution",
                  "How many scored answers fell in each faithfulness bucket over the dashboard's time range. "
                  "A healthy service piles up at 1.0; a second hump near 0 means fabricated answers.",
                  [target(f'sum by (le) (increase(ragpulse_faithfulness_score_bucket{{{s}}}[$__range]))',
                          "{{le}}", instant=True, fmt="heatmap")],
                  options={"displayMode": "basic", "orientation": "vertical",
                           "reduceOptions": {"calcs": ["lastNotNull"]}}), 16, 6)
    for metric in METRICS:
        lay.add(panel("timeseries", f"{metric.replace('_', ' ').capitalize()} per service",
                      f"Sampling-weighted mean {metric} per service (5-minute windows). The dashed line of the "
                      "faithfulness panel is the alert floor.",
                      [target(f'ragpulse:score_weighted_mean:rate5m{{metric="{metric}",{s}}}', "{{service}}")],
                      minmax=(0, 1), thresholds=QUALITY_THRESHOLDS if metric == "faithfulness" else None,
                      custom={"thresholdsStyle": {"mode": "dashed"}} if metric == "faithfulness" else None),
                8, 8)
    lay.row("Drift")
    lay.add(panel("state-timeline", "Drift alarms",
                  "1 while the scorer's CUSUM drift detector says the mean of a metric moved away from the "
                  "service's baseline (RagpulseScoreDrift).",
                  [target(f"max by (service, metric) (ragpulse_score_drift_alarm{{{s}}})", "{{service}} {{metric}}")],
                  thresholds=[("green", None), ("red", 1)]), 12, 8)
    lay.add(panel("timeseries", "Drift statistic vs threshold",
                  "The CUSUM statistic per service and metric, in baseline standard deviations; the alarm is "
                  "raised above the threshold line.",
                  [target(f"max by (service, metric) (ragpulse_score_drift_statistic{{{s}}})",
                          "{{service}} {{metric}}"),
                   target("max(ragpulse_score_drift_threshold)", "threshold", "B")]), 12, 8)
    lay.row("Volume and cost")
    lay.add(panel("timeseries", "Records received, sampled, scored",
                  "Per second: RAG records the collector extracted (received), kept by sampling (sampled) and "
                  "the scorer scored. Sampled far below received is the sampling policy; scored below sampled "
                  "means the scorer falls behind or fails.",
                  [target(f"sum(rate(ragpulse_records_received_total{{{s}}}[$__rate_interval]))", "received"),
                   target(f"sum(rate(ragpulse_records_sampled_total{{{s}}}[$__rate_interval]))", "sampled", "B"),
                   target(f"sum(rate(ragpulse_records_scored_total{{{s}}}[$__rate_interval]))", "scored", "C")],
                  unit="reqps"), 8, 8)
    lay.add(panel("timeseries", "Records dropped by reason",
                  "Records not handed to the bus: sampled_out is the sampling policy; invalid and bus_full "
                  "are problems.",
                  [target(f"sum by (reason) (rate(ragpulse_records_dropped_total{{{s}}}[$__rate_interval]))",
                          "{{reason}}")], unit="reqps"), 8, 8)
    lay.add(panel("timeseries", "Judge cost (USD per hour)",
                  "Judge spend from the configured price table; the local judge costs nothing.",
                  [target("sum by (judge) (rate(ragpulse_judge_cost_usd_total[$__rate_interval])) * 3600",
                          "{{judge}}")], unit="currencyUSD"), 8, 8)
    lay.row("Pipeline health")
    lay.add(panel("timeseries", "Judge failure ratio",
                  "Share of metric computations the judge could not answer (timeouts, malformed output, no "
                  "statements). They give no score, never a low one. RagpulseJudgeFailureRatioHigh fires "
                  "above 20%.",
                  [target("(sum by (judge) (rate(ragpulse_judge_requests_total{outcome!=\"ok\"}[$__rate_interval]))"
                          " or 0 * sum by (judge) (rate(ragpulse_judge_requests_total[$__rate_interval])))"
                          " / sum by (judge) (rate(ragpulse_judge_requests_total[$__rate_interval]))", "{{judge}}")],
                  unit="percentunit", minmax=(0, 1), thresholds=[("green", None), ("red", 0.2)]), 6, 8)
    lay.add(panel("timeseries", "Metric failures by reason",
                  "Metric computations that gave no score, per metric and reason.",
                  [target("sum by (metric, reason) (increase(ragpulse_metric_failures_total[$__rate_interval]))",
                          "{{metric}} {{reason}}")]), 6, 8)
    lay.add(panel("timeseries", "Queue depth / consumer lag",
                  "Records waiting to be scored. Growing for 15 minutes: RagpulseConsumerLagGrowing.",
                  [target("sum by (job) (ragpulse_queue_depth)", "{{job}}")]), 6, 8)
    lay.add(panel("stat", "Dead letters (last hour)",
                  "Records that failed for good, by reason; see them on the live page or in ragpulse.dlq.",
                  [target("sum by (reason) (increase(ragpulse_records_dead_lettered_total[1h])) or vector(0)",
                          "{{reason}}", instant=True)],
                  thresholds=[("green", None), ("red", 1)],
                  options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"}), 6, 8)
    return dashboard("ragpulse-overview", "ragpulse / Overview",
                     "Live quality of RAG apps (Ragas metrics) scored by ragpulse.", lay, True,
                     links=[{"title": "Per-service drill-down", "type": "dashboards", "tags": ["ragpulse"],
                             "asDropdown": False, "includeVars": True, "keepTime": True}])


def service_drilldown() -> dict[str, Any]:
    s = 'service="$service"'
    lay = Layout()
    lay.row("Quality of $service")
    for metric in METRICS:
        lay.add(panel("stat", f"{metric.replace('_', ' ').capitalize()} (15 min)",
                      f"Sampling-weighted mean {metric} of the service over the last 15 minutes.",
                      [target(f'ragpulse:score_weighted_mean:rate15m{{metric="{metric}",{s}}}')],
                      minmax=(0, 1), thresholds=QUALITY_THRESHOLDS if metric == "faithfulness" else None,
                      options={"reduceOptions": {"calcs": ["lastNotNull"]}, "colorMode": "background"}), 8, 4)
    lay.add(panel("timeseries", "Faithfulness per route and model",
                  "Weighted mean faithfulness per route and model (rag.route / rag.model span attributes): "
                  "find the one that went wrong.",
                  [target(f'sum by (route, model) (rate(ragpulse_segment_score_weighted_sum_total'
                          f'{{metric="faithfulness",{s}}}[$__rate_interval])) / sum by (route, model) '
                          f'(rate(ragpulse_segment_score_weight_total{{metric="faithfulness",{s}}}[$__rate_interval]))',
                          "{{route}} {{model}}")], minmax=(0, 1)), 12, 8)
    lay.add(panel("timeseries", "Answer and context relevancy per route",
                  "Weighted mean answer relevancy and context relevancy per route. Low context relevancy with "
                  "fine faithfulness points at retrieval.",
                  [target(f'sum by (route, metric) (rate(ragpulse_segment_score_weighted_sum_total'
                          f'{{metric=~"answer_relevancy|context_relevancy",{s}}}[$__rate_interval])) / '
                          f'sum by (route, metric) (rate(ragpulse_segment_score_weight_total'
                          f'{{metric=~"answer_relevancy|context_relevancy",{s}}}[$__rate_interval]))',
                          "{{route}} {{metric}}")], minmax=(0, 1)), 12, 8)
    lay.add(panel("timeseries", "Baseline vs current faithfulness (drift detector)",
                  "The drift detector's baseline mean, the mean of its recent window and that mean's "
                  "confidence interval. The current band leaving the baseline is what the drift alarm reports.",
                  [target(f'ragpulse_score_{name}{{metric="faithfulness",{s}}}', f"{legend} {{{{instance}}}}", ref)
                   for name, legend, ref in (("baseline_mean", "baseline", "A"), ("current_mean", "current", "B"),
                                             ("current_mean_lower", "lower", "C"),
                                             ("current_mean_upper", "upper", "D"))],
                  minmax=(0, 1)), 12, 8)
    lay.add(panel("timeseries", "Faithfulness error-budget burn rate",
                  f"How fast bad answers (faithfulness below the bad-event threshold) use the {BUDGET:.0%} "
                  "budget: 1 lasts the 30-day window; the fast-burn page fires at 14.4 (1 h and 5 min) or 6 "
                  "(6 h and 30 min).",
                  [target(f"ragpulse:faithfulness_bad_ratio:rate5m{{{s}}} / {BUDGET}", "5m"),
                   target(f"ragpulse:faithfulness_bad_ratio:rate1h{{{s}}} / {BUDGET}", "1h", "B"),
                   target(f"ragpulse:faithfulness_bad_ratio:rate6h{{{s}}} / {BUDGET}", "6h", "C")],
                  thresholds=[("green", None), ("orange", 6), ("red", 14.4)],
                  custom={"thresholdsStyle": {"mode": "dashed"}}), 12, 8)
    lay.add(panel("table", "Worst recent records",
                  "The lowest faithfulness scores among the service's recent records, by record id "
                  "(trace id - span id): open the trace in your tracing tool, or the record on the live page.",
                  [target(f"bottomk(20, max by (record_id, route, model) (ragpulse_recent_worst_score{{{s}}}))",
                          instant=True, fmt="table")],
                  minmax=(0, 1), thresholds=QUALITY_THRESHOLDS,
                  options={"sortBy": [{"displayName": "Value", "desc": False}]}), 12, 10)
    lay.add(panel("timeseries", "Volume of $service",
                  "Records received, sampled and scored per second for this service.",
                  [target(f"sum(rate(ragpulse_records_received_total{{{s}}}[$__rate_interval]))", "received"),
                   target(f"sum(rate(ragpulse_records_sampled_total{{{s}}}[$__rate_interval]))", "sampled", "B"),
                   target(f"sum(rate(ragpulse_records_scored_total{{{s}}}[$__rate_interval]))", "scored", "C")],
                  unit="reqps"), 12, 10)
    lay.add(panel("heatmap", "Faithfulness distribution over time",
                  "Scored answers per faithfulness bucket over time.",
                  [target(f"sum by (le) (increase(ragpulse_faithfulness_score_bucket{{{s}}}[$__rate_interval]))",
                          "{{le}}", fmt="heatmap")],
                  options={"calculate": False, "yAxis": {"unit": "none"}, "cellGap": 1}), 24, 8)
    return dashboard("ragpulse-service", "ragpulse / Service drill-down",
                     "One service's RAG quality by route and model, its drift, error budget and worst records.",
                     lay, False,
                     links=[{"title": "Overview", "type": "link", "url": "/d/ragpulse-overview",
                             "includeVars": True, "keepTime": True}])


DASHBOARDS = {"ragpulse-overview.json": overview, "ragpulse-service.json": service_drilldown}


def render() -> dict[str, str]:
    return {name: json.dumps(build(), indent=2, ensure_ascii=False) + "\n" for name, build in DASHBOARDS.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed JSON is out of date")
    args = parser.parse_args()
    stale = []
    for name, text in render().items():
        path = OUT / name
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"out of date: {', '.join(stale)}; run python grafana/generate.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Generates the Grafana dashboards in grafana/dashboards/ from code.

    python grafana/generate.py          # rewrite the JSON files
    python grafana/generate.py --check  # exit 1 if the committed JSON differs (CI)

Built with Grafana's own typed builders (grafana-foundation-sdk, a build-time tool: the `dashboards`
extra, never a runtime dependency of ragpulse), so panels, options and links follow Grafana's
dashboard schema by construction. The one thing the SDK cannot say is a Prometheus annotation's
title and text format and step (its AnnotationQuery has no such fields): those three keys are
added to the built JSON (PROMETHEUS_ANNOTATION). tests/e2e/test_dashboards_live.py runs every panel's
query against a real Prometheus that scraped a real ragpulse run, and asks it for the exemplars of
the panels that show them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TypeVar

from grafana_foundation_sdk.builders import (
    bargauge,
    common,
    heatmap,
    prometheus,
    stat,
    statetimeline,
    table,
    timeseries,
)
from grafana_foundation_sdk.builders import dashboard as gd
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import (
    BarGaugeDisplayMode,
    BigValueColorMode,
    GraphThresholdsStyleMode,
    VizOrientation,
)
from grafana_foundation_sdk.models.dashboard import (
    DashboardCursorSync,
    DashboardLinkType,
    DataSourceRef,
    GridPos,
    Threshold,
    ThresholdsMode,
    VariableRefresh,
    VariableSort,
)
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

from ragpulse.core.metric_names import METRIC_NAMES as METRICS

OUT = Path(__file__).resolve().parent / "dashboards"
DS = DataSourceRef(type_val="prometheus", uid="${datasource}")
FLOOR = 0.7  # deploy/prometheus/rules/ragpulse-alerts.yml, RagpulseFaithfulnessBelowFloor
BUDGET = 0.05  # the faithfulness SLO's error budget (95% good answers)
# Defaults of the link variables: ragpulse's own address (prometheus.endpoint), and a Jaeger's
# trace URL up to the trace id. Both are text boxes on the dashboard, kept in its URL.
LIVE_PAGE_URL = "http://127.0.0.1:9464"
TRACE_URL = "http://127.0.0.1:16686/trace/"
# What the SDK's AnnotationQuery cannot express (see the module doc).
PROMETHEUS_ANNOTATION = {"titleFormat": "{{alertname}}", "textFormat": "{{service}} {{metric}}", "step": "1m"}

P = TypeVar("P", bound=Any)


class Layout:
    """Places panels left to right on Grafana's 24-column grid (a panel that does not fit starts a
    new line; the SDK's own placement lets it overflow) and hands out panel ids."""

    def __init__(self) -> None:
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1
        self.items: list[Any] = []

    def add(self, panel: Any, w: int, h: int) -> None:
        if self.x + w > 24:
            self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.items.append(panel.id(self.next_id).grid_pos(GridPos(h=h, w=w, x=self.x, y=self.y)))
        self.next_id += 1
        self.x += w
        self.row_h = max(self.row_h, h)

    def row(self, title: str) -> None:
        self.x, self.y, self.row_h = 0, self.y + self.row_h, 0
        self.add(gd.Row(title), 24, 1)
        self.x, self.y, self.row_h = 0, self.y + 1, 0


def target(expr: str, legend: str = "", ref: str = "A", instant: bool = False,
           fmt: PromQueryFormat = PromQueryFormat.TIME_SERIES, exemplar: bool = False) -> prometheus.Dataquery:
    query = prometheus.Dataquery().datasource(DS).expr(expr).legend_format(legend).ref_id(ref).format(fmt)
    if exemplar:
        # Each dot a recorded answer's trace id (the histograms' exemplars; docs/live-page-and-alerts.md, "Exemplars").
        query = query.exemplar(True)
    return query.instant() if instant else query.range()


def link(title: str, url: str) -> gd.DashboardLink:
    return gd.DashboardLink(title).type(DashboardLinkType.LINK).url(url).target_blank(True)


def live_page_link(service: str) -> gd.DashboardLink:
    """The live page's records of `service` (a Grafana expression) over the dashboard's time range
    (Grafana's ${__from} and ${__to} are milliseconds; the page reads them as such)."""
    return link("Live page: records of this service",
                f"${{live_page_url}}/?service=${{{service}:percentencode}}&from=${{__from}}&to=${{__to}}")


# A service's rows link to the live page filtered to it, and to the service drill-down.
SERVICE_LINKS = [live_page_link("__field.labels.service"),
                 gd.DashboardLink("Service drill-down").type(DashboardLinkType.LINK)
                 .url("/d/ragpulse-service?var-service=${__field.labels.service:percentencode}&${__url_time_range}")]


def panel(builder: P, title: str, description: str, targets: list[prometheus.Dataquery], unit: str = "",
          minmax: tuple[float, float] | None = None, thresholds: list[tuple[str, float | None]] | None = None,
          links: list[gd.DashboardLink] | None = None) -> P:
    """The settings every panel kind shares, on a typed panel builder."""
    builder = builder.title(title).description(description).datasource(DS).targets(targets)
    if unit:
        builder = builder.unit(unit)
    if minmax:
        builder = builder.min(minmax[0]).max(minmax[1])
    if thresholds:
        builder = builder.thresholds(gd.ThresholdsConfig().mode(ThresholdsMode.ABSOLUTE).steps(
            [Threshold(color=c, value=v) for c, v in thresholds])).color_scheme(
            gd.FieldColor().mode("thresholds"))
    if links:
        builder = builder.data_links(links)
    return builder


def last_value() -> common.ReduceDataOptions:
    return common.ReduceDataOptions().calcs(["lastNotNull"])


def stat_panel() -> stat.Panel:
    return stat.Panel().reduce_options(last_value()).color_mode(BigValueColorMode.BACKGROUND)


def dashed_thresholds() -> common.GraphThresholdsStyleConfig:
    return common.GraphThresholdsStyleConfig().mode(GraphThresholdsStyleMode.DASHED)


QUALITY_THRESHOLDS = [("red", None), ("orange", FLOOR), ("green", 0.85)]


def variables(service_multi: bool) -> list[Any]:
    service = (gd.QueryVariable("service").label("service").datasource(DS)
               .query({"query": "label_values(ragpulse_score_weight_total, service)", "refId": "service"})
               .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
               .multi(service_multi).include_all(service_multi))
    return [
        gd.DatasourceVariable("datasource").label("Prometheus").type("prometheus"),
        service,
        gd.TextBoxVariable("live_page_url").label("live page").default_value(LIVE_PAGE_URL)
        .description("ragpulse's live page (prometheus.endpoint or page.endpoint), for the data links"),
        gd.TextBoxVariable("trace_url").label("trace URL").default_value(TRACE_URL)
        .description("Your tracing backend's trace URL up to the trace id (Jaeger: http://jaeger:16686/trace/)"),
    ]


def dashboard(uid: str, title: str, description: str, layout: Layout, service_multi: bool,
              links: list[gd.DashboardLink]) -> dict[str, Any]:
    d = (gd.Dashboard(title).uid(uid).description(description).tags(["ragpulse", "rag", "llm"])
         .editable().tooltip(DashboardCursorSync.CROSSHAIR).time("now-6h", "now").refresh("30s").timezone("")
         .version(1).variables(variables(service_multi)).links(links)
         .annotation(gd.AnnotationQuery().name("ragpulse alerts").datasource(DS).enable(True).icon_color("red")
                     .expr('ALERTS{alertname=~"Ragpulse.*", alertstate="firing", service=~"$service"}')))
    for item in layout.items:
        d = d.with_row(item) if isinstance(item, gd.Row) else d.with_panel(item)
    out = json.loads(json.dumps(d.build(), cls=JSONEncoder))
    out["annotations"]["list"][0].update(PROMETHEUS_ANNOTATION)
    return out


def overview() -> dict[str, Any]:
    s = 'service=~"$service"'
    lay = Layout()
    lay.row("Quality")
    lay.add(panel(stat_panel(), "Faithfulness now (15 min)",
                  "Sampling-weighted mean faithfulness over the last 15 minutes per service. Red under the "
                  f"{FLOOR} floor of the RagpulseFaithfulnessBelowFloor alert. Click a service for its records "
                  "on the live page or its drill-down.",
                  [target(f'ragpulse:score_weighted_mean:rate15m{{metric="faithfulness",{s}}}', "{{service}}")],
                  minmax=(0, 1), thresholds=QUALITY_THRESHOLDS, links=SERVICE_LINKS), 8, 6)
    lay.add(panel(bargauge.Panel().display_mode(BarGaugeDisplayMode.BASIC).orientation(VizOrientation.VERTICAL)
                  .reduce_options(last_value()), "Faithfulness distribution",
                  "How many scored answers fell in each faithfulness bucket over the dashboard's time range. "
                  "A healthy service piles up at 1.0; a second hump near 0 means fabricated answers.",
                  [target(f'sum by (le) (increase(ragpulse_faithfulness_score_bucket{{{s}}}[$__range]))',
                          "{{le}}", instant=True, fmt=PromQueryFormat.HEATMAP)]), 16, 6)
    for metric in METRICS:
        faithfulness = metric == "faithfulness"
        ts = timeseries.Panel().thresholds_style(dashed_thresholds()) if faithfulness else timeseries.Panel()
        lay.add(panel(ts, f"{metric.replace('_', ' ').capitalize()} per service",
                      f"Sampling-weighted mean {metric} per service (5-minute windows). The dashed line of the "
                      "faithfulness panel is the alert floor. Click a series for the service's records on the "
                      "live page.",
                      [target(f'ragpulse:score_weighted_mean:rate5m{{metric="{metric}",{s}}}', "{{service}}")],
                      minmax=(0, 1), thresholds=QUALITY_THRESHOLDS if faithfulness else None,
                      links=SERVICE_LINKS), 8, 8)
    lay.add(panel(timeseries.Panel().thresholds_style(dashed_thresholds()), "Low faithfulness: 10th percentile",
                  "The faithfulness that 10% of each service's answers fall below (from the score histogram). "
                  "The dots are exemplars: recent answers with their trace ids; a dot low on the chart opens "
                  "the trace of an answer that scored there (set the data source's exemplar link to your "
                  "tracing backend: grafana/provisioning/datasources/ragpulse.yml).",
                  [target(f"histogram_quantile(0.1, sum by (le, service) "
                          f"(rate(ragpulse_faithfulness_score_bucket{{{s}}}[$__rate_interval])))",
                          "{{service}}", exemplar=True)],
                  minmax=(0, 1), thresholds=QUALITY_THRESHOLDS, links=SERVICE_LINKS), 8, 8)
    lay.row("Drift")
    lay.add(panel(statetimeline.Panel(), "Drift alarms",
                  "1 while the scorer's CUSUM drift detector says the mean of a metric moved away from the "
                  "service's baseline (RagpulseScoreDrift).",
                  [target(f"max by (service, metric) (ragpulse_score_drift_alarm{{{s}}})", "{{service}} {{metric}}")],
                  thresholds=[("green", None), ("red", 1)]), 12, 8)
    lay.add(panel(timeseries.Panel(), "Drift statistic vs threshold",
                  "The CUSUM statistic per service and metric, in baseline standard deviations; the alarm is "
                  "raised above the threshold line.",
                  [target(f"max by (service, metric) (ragpulse_score_drift_statistic{{{s}}})",
                          "{{service}} {{metric}}"),
                   target("max(ragpulse_score_drift_threshold)", "threshold", "B")]), 12, 8)
    lay.row("Volume and cost")
    lay.add(panel(timeseries.Panel(), "Records received, sampled, scored",
                  "Per second: RAG records the collector extracted (received), kept by sampling (sampled) and "
                  "the scorer scored. Sampled far below received is the sampling policy; scored below sampled "
                  "means the scorer falls behind or fails.",
                  [target(f"sum(rate(ragpulse_records_received_total{{{s}}}[$__rate_interval]))", "received"),
                   target(f"sum(rate(ragpulse_records_sampled_total{{{s}}}[$__rate_interval]))", "sampled", "B"),
                   target(f"sum(rate(ragpulse_records_scored_total{{{s}}}[$__rate_interval]))", "scored", "C")],
                  unit="reqps"), 8, 8)
    lay.add(panel(timeseries.Panel(), "Records dropped by reason",
                  "Records not handed to the bus: sampled_out is the sampling policy; invalid and bus_full "
                  "are problems.",
                  [target(f"sum by (reason) (rate(ragpulse_records_dropped_total{{{s}}}[$__rate_interval]))",
                          "{{reason}}")], unit="reqps"), 8, 8)
    lay.add(panel(timeseries.Panel(), "Judge cost (USD per hour)",
                  "Judge spend from the configured price table; the local judge costs nothing.",
                  [target("sum by (judge) (rate(ragpulse_judge_cost_usd_total[$__rate_interval])) * 3600",
                          "{{judge}}")], unit="currencyUSD"), 8, 8)
    lay.row("Pipeline health")
    lay.add(panel(timeseries.Panel(), "Judge failure ratio",
                  "Share of metric computations the judge could not answer (timeouts, malformed output, no "
                  "statements). They give no score, never a low one. RagpulseJudgeFailureRatioHigh fires "
                  "above 20%.",
                  [target("(sum by (judge) (rate(ragpulse_judge_requests_total{outcome!=\"ok\"}[$__rate_interval]))"
                          " or 0 * sum by (judge) (rate(ragpulse_judge_requests_total[$__rate_interval])))"
                          " / sum by (judge) (rate(ragpulse_judge_requests_total[$__rate_interval]))", "{{judge}}")],
                  unit="percentunit", minmax=(0, 1), thresholds=[("green", None), ("red", 0.2)]), 6, 8)
    lay.add(panel(timeseries.Panel(), "Metric failures by reason",
                  "Metric computations that gave no score, per metric and reason.",
                  [target("sum by (metric, reason) (increase(ragpulse_metric_failures_total[$__rate_interval]))",
                          "{{metric}} {{reason}}")]), 6, 8)
    lay.add(panel(timeseries.Panel(), "Queue depth / consumer lag",
                  "Records waiting to be scored. Growing for 15 minutes: RagpulseConsumerLagGrowing.",
                  [target("sum by (job) (ragpulse_queue_depth)", "{{job}}")]), 6, 8)
    lay.add(panel(stat_panel(), "Dead letters (last hour)",
                  "Records that failed for good, by reason; see them on the live page or in ragpulse.dlq.",
                  [target("sum by (reason) (increase(ragpulse_records_dead_lettered_total[1h])) or vector(0)",
                          "{{reason}}", instant=True)],
                  thresholds=[("green", None), ("red", 1)]), 6, 8)
    return dashboard("ragpulse-overview", "ragpulse / Overview",
                     "Live quality of RAG apps (Ragas metrics) scored by ragpulse.", lay, True,
                     links=[gd.DashboardLink("Per-service drill-down").type(DashboardLinkType.DASHBOARDS)
                            .tags(["ragpulse"]).as_dropdown(False).include_vars(True).keep_time(True),
                            link("Live page", "${live_page_url}/")])


def service_drilldown() -> dict[str, Any]:
    s = 'service="$service"'
    lay = Layout()
    lay.row("Quality of $service")
    for metric in METRICS:
        lay.add(panel(stat_panel(), f"{metric.replace('_', ' ').capitalize()} (15 min)",
                      f"Sampling-weighted mean {metric} of the service over the last 15 minutes.",
                      [target(f'ragpulse:score_weighted_mean:rate15m{{metric="{metric}",{s}}}')],
                      minmax=(0, 1), thresholds=QUALITY_THRESHOLDS if metric == "faithfulness" else None), 8, 4)
    lay.add(panel(timeseries.Panel(), "Faithfulness per route and model",
                  "Weighted mean faithfulness per route and model (rag.route / rag.model span attributes): "
                  "find the one that went wrong.",
                  [target(f'sum by (route, model) (rate(ragpulse_segment_score_weighted_sum_total'
                          f'{{metric="faithfulness",{s}}}[$__rate_interval])) / sum by (route, model) '
                          f'(rate(ragpulse_segment_score_weight_total{{metric="faithfulness",{s}}}[$__rate_interval]))',
                          "{{route}} {{model}}")], minmax=(0, 1), links=[live_page_link("service")]), 12, 8)
    lay.add(panel(timeseries.Panel(), "Answer and context relevancy per route",
                  "Weighted mean answer relevancy and context relevancy per route. Low context relevancy with "
                  "fine faithfulness points at retrieval.",
                  [target(f'sum by (route, metric) (rate(ragpulse_segment_score_weighted_sum_total'
                          f'{{metric=~"answer_relevancy|context_relevancy",{s}}}[$__rate_interval])) / '
                          f'sum by (route, metric) (rate(ragpulse_segment_score_weight_total'
                          f'{{metric=~"answer_relevancy|context_relevancy",{s}}}[$__rate_interval]))',
                          "{{route}} {{metric}}")], minmax=(0, 1)), 12, 8)
    lay.add(panel(timeseries.Panel(), "Baseline vs current faithfulness (drift detector)",
                  "The drift detector's baseline mean, the mean of its recent window and that mean's "
                  "confidence interval. The current band leaving the baseline is what the drift alarm reports.",
                  [target(f'ragpulse_score_{name}{{metric="faithfulness",{s}}}', f"{legend} {{{{instance}}}}", ref)
                   for name, legend, ref in (("baseline_mean", "baseline", "A"), ("current_mean", "current", "B"),
                                             ("current_mean_lower", "lower", "C"),
                                             ("current_mean_upper", "upper", "D"))],
                  minmax=(0, 1)), 12, 8)
    lay.add(panel(timeseries.Panel().thresholds_style(dashed_thresholds()), "Faithfulness error-budget burn rate",
                  f"How fast bad answers (faithfulness below the bad-event threshold) use the {BUDGET:.0%} "
                  "budget: 1 lasts the 30-day window; the fast-burn page fires at 14.4 (1 h and 5 min) or 6 "
                  "(6 h and 30 min).",
                  [target(f"ragpulse:faithfulness_bad_ratio:rate5m{{{s}}} / {BUDGET}", "5m"),
                   target(f"ragpulse:faithfulness_bad_ratio:rate1h{{{s}}} / {BUDGET}", "1h", "B"),
                   target(f"ragpulse:faithfulness_bad_ratio:rate6h{{{s}}} / {BUDGET}", "6h", "C")],
                  thresholds=[("green", None), ("orange", 6), ("red", 14.4)]), 12, 8)
    # The record id is "<trace id>-<span id>": label_replace gives the trace id its own column, so a
    # row links to its trace.
    lay.add(panel(table.Panel().sort_by([common.TableSortByFieldState().display_name("Value").desc(False)]),
                  "Worst recent records",
                  "The lowest faithfulness scores among the service's recent records, by record id "
                  "(trace id - span id). Click a row for its trace in your tracing backend (the trace URL "
                  "variable) or the service's records on the live page.",
                  [target('label_replace(bottomk(20, max by (record_id, route, model) '
                          f'(ragpulse_recent_worst_score{{{s}}})), "trace_id", "$1", "record_id", "([0-9a-f]+)-.*")',
                          instant=True, fmt=PromQueryFormat.TABLE)],
                  minmax=(0, 1), thresholds=QUALITY_THRESHOLDS,
                  links=[link("Trace in your tracing backend", "${trace_url}${__data.fields.trace_id}"),
                         live_page_link("service")]), 12, 10)
    lay.add(panel(timeseries.Panel(), "Volume of $service",
                  "Records received, sampled and scored per second for this service.",
                  [target(f"sum(rate(ragpulse_records_received_total{{{s}}}[$__rate_interval]))", "received"),
                   target(f"sum(rate(ragpulse_records_sampled_total{{{s}}}[$__rate_interval]))", "sampled", "B"),
                   target(f"sum(rate(ragpulse_records_scored_total{{{s}}}[$__rate_interval]))", "scored", "C")],
                  unit="reqps"), 12, 10)
    lay.add(panel(heatmap.Panel().calculate(False).y_axis(heatmap.YAxisConfig().unit("none")).cell_gap(1),
                  "Faithfulness distribution over time",
                  "Scored answers per faithfulness bucket over time. The dots are exemplars: recent answers "
                  "with their trace ids; one in a low bucket opens the trace of an answer that scored there.",
                  [target(f"sum by (le) (increase(ragpulse_faithfulness_score_bucket{{{s}}}[$__rate_interval]))",
                          "{{le}}", fmt=PromQueryFormat.HEATMAP, exemplar=True)]), 24, 8)
    return dashboard("ragpulse-service", "ragpulse / Service drill-down",
                     "One service's RAG quality by route and model, its drift, error budget and worst records.",
                     lay, False,
                     links=[gd.DashboardLink("Overview").type(DashboardLinkType.LINK).url("/d/ragpulse-overview")
                            .include_vars(True).keep_time(True),
                            link("Live page: records of $service",
                                 "${live_page_url}/?service=${service:percentencode}&from=${__from}&to=${__to}")])


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

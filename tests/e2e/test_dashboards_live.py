"""Every panel query of the shipped Grafana dashboards returns data from a real Prometheus that
scraped a real `ragpulse up` fed with real OTel SDK traffic (Grafana itself cannot be installed
here: this is the check that the dashboards show something)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time

import pytest
import yaml
from otel_app import RagApp
from prometheus_server import (
    CORPUS,
    NO_CLAIM_ANSWER,
    REPO,
    PrometheusServer,
    prometheus_binary,
    rules_for_test,
    send_answers,
)
from ragpulse_process import RagpulseProcess

from ragpulse.core.metric_names import METRIC_NAMES

DASHBOARDS = REPO / "grafana" / "dashboards"
SERVICES = ("shop", "社内ヘルプデスク", "docs-bot")


def panel_targets(dashboard: dict) -> list[tuple[str, dict]]:
    out = []
    for panel in dashboard["panels"]:
        for t in panel.get("targets", []):
            out.append((panel["title"], t))
    return out


def substitute(expr: str, service: str, multi: bool) -> str:
    # What Grafana would send: $service expands to one value or a regex of the selected values,
    # $__rate_interval to 4 scrape intervals at least (15s scrapes in production; 1m here covers the
    # test's traffic), $__range to the dashboard's time range.
    value = "|".join(SERVICES) if multi else service
    expr = expr.replace("$service", value)
    return expr.replace("$__rate_interval", "1m").replace("$__range", "10m")


def send_with_references(apps: list[RagApp]) -> None:
    """Answers with a reference and samples: the reference-based metrics and SelfCheck score only those."""
    for i, app in enumerate(apps):
        for question, contexts, good, _ in CORPUS * 2:
            app.answer(question, contexts, good, **{"rag.reference": good, "rag.samples": [good, good],
                                                    "rag.route": f"/r{i % 2}", "rag.model": f"m{i}"})


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory):
    prometheus_binary()  # fail (CI) or skip before starting anything
    tmp = tmp_path_factory.mktemp("dashboards")
    proc = RagpulseProcess(tmp, settings={
        # docs-bot sampled at 50%: exercises the weights and the sampled_out drops panel.
        "sampling": {"per_service": {"docs-bot": 0.5}},
        "drift": {"min_samples": 20, "recent_window": 20},
        # Every metric a dashboard has a panel for, the opt-in ones too.
        "scorer": {"metrics": list(METRIC_NAMES)},
    })
    prom = PrometheusServer(tmp, [proc.metrics], rule_files=rules_for_test(tmp),
                            flags=("--enable-feature=exemplar-storage",)).start()
    try:
        prom.wait_for_target_up()
        apps = [RagApp(s, "http", proc.http) for s in SERVICES]
        # Before and after the rest: a rate needs its counter to grow between two scrapes.
        send_with_references(apps)
        threads = [threading.Thread(target=send_answers, args=(app, 60, i != 1),
                                    kwargs={"rate_per_s": 4.0, "route": f"/r{i % 2}", "model": f"m{i}"})
                   for i, app in enumerate(apps)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        send_with_references(apps)
        apps[0].answer("How do I reset my password?", ["Open Settings."], NO_CLAIM_ANSWER)
        for app in apps:
            app.close()
        proc.wait_for("ragpulse_records_scored_total", 60 + 4 * len(CORPUS) + 1, service="shop")
        proc.wait_drained()  # docs-bot's last answers with references too, not only shop's
        # Two more scrape + evaluation rounds so the recording rules have seen the last scores.
        time.sleep(4)
        yield proc, prom
    finally:
        prom.stop()
        proc.stop()


def test_generated_json_is_up_to_date():
    out = subprocess.run([sys.executable, str(REPO / "grafana" / "generate.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_dashboards_are_current_schema_with_unique_ids():
    for path in DASHBOARDS.glob("*.json"):
        d = json.loads(path.read_text(encoding="utf-8"))
        assert d["schemaVersion"] >= 39 and d["uid"]
        ids = [p["id"] for p in d["panels"]]
        assert len(ids) == len(set(ids))
        for p in d["panels"]:
            assert p["type"] == "row" or (p["targets"] and p["description"]), p["title"]


@pytest.mark.prometheus
def test_every_panel_query_returns_data(live):
    _, prom = live
    now = time.time()
    empty = []
    checked = 0
    for path in sorted(DASHBOARDS.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        multi = any(v["name"] == "service" and v.get("multi") for v in d["templating"]["list"])
        for title, t in panel_targets(d):
            # The drill-down is checked for the service sampled at 50% and with unfaithful answers.
            expr = substitute(t["expr"], "docs-bot", multi)
            try:
                if t.get("instant"):
                    ok = bool(prom.query(expr))
                else:
                    ok = any(series["values"] for series in prom.query_range(expr, now - 120, now, "5s"))
            except AssertionError as e:
                ok = False
                expr = f"{expr}\n    {e}"
            checked += 1
            if not ok:
                empty.append(f"{path.name} / {title}: {expr}")
    assert checked >= 20
    assert not empty, "panels without data:\n" + "\n".join(empty)


def links(dashboard: dict) -> list[tuple[str, str]]:
    """(panel title or "dashboard", URL) of every dashboard link and panel data link."""
    out = [("dashboard", link["url"]) for link in dashboard["links"] if link.get("url")]
    for panel in dashboard["panels"]:
        defaults = panel.get("fieldConfig", {}).get("defaults", {})
        out += [(panel["title"], link["url"]) for link in defaults.get("links", [])]
    return out


def test_links_lead_to_the_live_page_and_the_traces():
    """Every data link uses the dashboards' own variables or Grafana's built-ins; a service's rows
    open the live page filtered to that service and the time range (the parameters the page
    reads: docs/live-page-api.md), the worst records their traces."""
    builtins = {"__from", "__to", "__url_time_range", "__field.labels.service", "__data.fields.trace_id"}
    seen = set()
    for path in sorted(DASHBOARDS.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        names = {v["name"] for v in d["templating"]["list"]}
        assert {"live_page_url", "trace_url"} <= names
        for title, url in links(d):
            for var in re.findall(r"\$\{([^}:]+)(?::\w+)?\}", url):
                assert var in names or var in builtins, f"{path.name} / {title}: {url}"
            if url.startswith("${live_page_url}/?"):
                seen.add("live page")
                assert re.fullmatch(r"\$\{live_page_url\}/\?service=\$\{[\w.]+:percentencode\}"
                                    r"&from=\$\{__from\}&to=\$\{__to\}", url), url
            if url.startswith("${trace_url}"):
                seen.add("trace")
    assert seen == {"live page", "trace"}
    overview = json.loads((DASHBOARDS / "ragpulse-overview.json").read_text(encoding="utf-8"))
    faithfulness = [p for p in overview["panels"] if "aithfulness" in p["title"] and p["type"] != "bargauge"]
    assert faithfulness and all(p["fieldConfig"]["defaults"]["links"] for p in faithfulness)


@pytest.mark.prometheus
def test_exemplar_panels_get_the_answers_trace_ids(live):
    """The panels that show exemplars ask for them on a histogram whose exemplars Prometheus keeps:
    each returns exemplars carrying a trace id."""
    _, prom = live
    now = time.time()
    checked = 0
    for path in sorted(DASHBOARDS.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        multi = any(v["name"] == "service" and v.get("multi") for v in d["templating"]["list"])
        for title, t in panel_targets(d):
            if not t.get("exemplar"):
                continue
            expr = substitute(t["expr"], "docs-bot", multi)
            found = prom.api("query_exemplars", query=expr, start=str(now - 600), end=str(now))
            trace_ids = [e["labels"].get("trace_id") for series in found for e in series["exemplars"]]
            assert trace_ids and all(re.fullmatch(r"[0-9a-f]{32}", t) for t in trace_ids), f"{path.name} / {title}"
            checked += 1
    assert checked >= 2


@pytest.mark.prometheus
def test_worst_records_carry_their_trace_id(live):
    _, prom = live
    d = json.loads((DASHBOARDS / "ragpulse-service.json").read_text(encoding="utf-8"))
    (panel,) = [p for p in d["panels"] if p["title"] == "Worst recent records"]
    rows = prom.query(substitute(panel["targets"][0]["expr"], "docs-bot", False))
    assert rows
    for row in rows:
        labels = row["metric"]
        assert labels["record_id"].startswith(labels["trace_id"] + "-") and len(labels["trace_id"]) == 32


@pytest.mark.prometheus
def test_service_variable_lists_the_services(live):
    _, prom = live
    d = json.loads((DASHBOARDS / "ragpulse-overview.json").read_text(encoding="utf-8"))
    (var,) = [v for v in d["templating"]["list"] if v["name"] == "service"]
    metric = re.fullmatch(r"label_values\((\w+), service\)", var["query"]["query"])[1]
    values = prom.api("label/service/values", **{"match[]": metric})
    assert set(SERVICES) <= set(values)


@pytest.mark.prometheus
def test_weighted_mean_reflects_sampling_and_quality(live):
    _, prom = live
    means = {r["metric"]["service"]: float(r["value"][1])
             for r in prom.query('ragpulse:score_weighted_mean:rate15m{metric="faithfulness"}')}
    # shop and docs-bot answer faithfully, 社内ヘルプデスク does not (see the traffic above).
    assert means["shop"] > 0.7 and means["docs-bot"] > 0.7
    assert means["社内ヘルプデスク"] < 0.4


def test_datasource_links_exemplars_to_traces():
    """The provisioned data source opens an exemplar's trace by the label the histograms carry."""
    doc = yaml.safe_load((REPO / "grafana" / "provisioning" / "datasources" / "ragpulse.yml").read_text())
    (dest,) = doc["datasources"][0]["jsonData"]["exemplarTraceIdDestinations"]
    assert dest["name"] == "trace_id" and dest["url"].endswith("$${__value.raw}")

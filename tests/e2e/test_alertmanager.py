"""The shipped Alertmanager config (deploy/prometheus/alertmanager.yml) and the links every alert
carries. End to end: real `ragpulse up`, real Prometheus with the shipped rules (windows and `for:`
scaled by 1/60) and a real Alertmanager with the shipped routes and inhibitions: unfaithful answers
page the service's team through a webhook with links to the live page and the runbook, the drift
ticket is held back meanwhile, and faithful answers bring the resolution."""

from __future__ import annotations

import subprocess
import time
import urllib.parse
import urllib.request

import pytest
import yaml
from alertmanager_server import (
    SHIPPED_CONFIG,
    AlertmanagerServer,
    alertmanager_config_for_test,
    amtool_binary,
    route_of,
    webhook_receiver,  # noqa: F401 - the fixture
)
from otel_app import RagApp
from prometheus_server import RULES_DIR, PrometheusServer, prometheus_binary, rules_for_test
from ragpulse_process import RagpulseProcess
from test_alerts_e2e import TIME_FACTOR, Traffic

SERVICE = "support-bot"  # the shipped routes send its pages to its own team
DOCS = "https://docs.example.com/ragpulse"
LIVE_PAGE = '{{ or $externalLabels.live_page_base_url "http://127.0.0.1:9464" }}/?'
# Pipeline alerts about a judge, a scorer job or a dead-letter reason, not a service.
NOT_BY_SERVICE = {"RagpulseJudgeFailureRatioHigh": "judge", "RagpulseConsumerLagGrowing": "job",
                  "RagpulseDeadLettersGrowing": "reason", "RagpulseOfflineJudgeResidualShift": "metric"}
RUNBOOK = '{{ or $externalLabels.runbook_base_url "docs" }}/dashboards.md#'


def alert_rules() -> list[dict]:
    doc = yaml.safe_load((RULES_DIR / "ragpulse-alerts.yml").read_text(encoding="utf-8"))
    return [r for group in doc["groups"] for r in group["rules"] if "alert" in r]


def test_every_alert_links_the_live_page_and_its_runbook():
    for rule in alert_rules():
        live, runbook = rule["annotations"]["live_page_url"], rule["annotations"]["runbook_url"]
        assert live.startswith(LIVE_PAGE) and "at={{ with query" in live, rule["alert"]
        # Filtered to the service wherever the alert has one.
        other = NOT_BY_SERVICE.get(rule["alert"])
        assert other is None or f"by ({other})" in rule["expr"], rule["alert"]
        assert ("service={{ $labels.service | urlquery }}" in live) == (other is None), rule["alert"]
        assert runbook == RUNBOOK + rule["alert"].lower()


@pytest.mark.prometheus
def test_shipped_config_is_valid_and_routes_by_severity_and_service():
    out = subprocess.run([amtool_binary(), "check-config", str(SHIPPED_CONFIG)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert route_of({"severity": "page", "service": SERVICE}) == ["support-bot-pager"]
    assert route_of({"severity": "page", "service": "shop"}) == ["ragpulse-pager"]
    assert route_of({"severity": "ticket", "service": SERVICE}) == ["ragpulse-tickets"]
    assert route_of({"alertname": "NoSeverity"}) == ["ragpulse-tickets"]


def _is(alertname: str, status: str, receiver_name: str):
    def match(receiver, payload, alert) -> bool:
        return (receiver == receiver_name and alert["status"] == status
                and alert["labels"].get("alertname") == alertname and alert["labels"].get("service") == SERVICE)
    return match


@pytest.mark.prometheus
@pytest.mark.slow
def test_page_with_links_then_resolution_through_a_real_alertmanager(tmp_path, webhook_receiver):  # noqa: F811
    prometheus_binary()
    am_dir = tmp_path / "alertmanager"
    am_dir.mkdir()
    am = AlertmanagerServer(am_dir, alertmanager_config_for_test(am_dir, webhook_receiver.url)).start()
    proc = RagpulseProcess(tmp_path, settings={"drift": {"min_samples": 60, "recent_window": 30}})
    live_page = f"http://{proc.metrics}"
    prom = PrometheusServer(tmp_path, [proc.metrics], rule_files=rules_for_test(tmp_path, TIME_FACTOR), extra_config={
        "global": {"external_labels": {"live_page_base_url": live_page, "runbook_base_url": DOCS}},
        "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{am.port}"]}]}]},
    }).start()
    app = RagApp(SERVICE, "grpc", proc.grpc)
    try:
        prom.wait_for_target_up()
        with Traffic(app) as traffic:
            # Faithful first: the drift detector arms and the 7-day baseline fills.
            proc.wait_for("ragpulse_records_scored_total", 100, timeout_s=120, service=SERVICE)
            unfaithful_from = time.time()
            traffic.faithful = False
            _, _, page = webhook_receiver.wait_for(
                _is("RagpulseFaithfulnessBelowFloor", "firing", "support-bot-pager"), 240,
                f"the floor page of {SERVICE} at its team's pager")
            links = page["annotations"]
            assert links["runbook_url"] == f"{DOCS}/dashboards.md#ragpulsefaithfulnessbelowfloor"
            url = urllib.parse.urlsplit(links["live_page_url"])
            assert f"{url.scheme}://{url.netloc}" == live_page
            query = urllib.parse.parse_qs(url.query)
            assert query["service"] == [SERVICE]
            assert unfaithful_from - 5 <= int(query["at"][0]) <= time.time()
            with urllib.request.urlopen(links["live_page_url"], timeout=5) as r:
                assert r.status == 200 and b"<html" in r.read().lower()

            # While the floor page fires, the service's faithfulness drift ticket is inhibited.
            deadline = time.monotonic() + 120
            drift: list[dict] = []
            while time.monotonic() < deadline:
                drift = am.alerts(alertname="RagpulseScoreDrift", service=SERVICE, metric="faithfulness")
                if drift and drift[0]["status"]["inhibitedBy"]:
                    break
                time.sleep(1)
            assert drift and drift[0]["status"]["state"] == "suppressed", drift

            traffic.faithful = True
            _, _, resolved = webhook_receiver.wait_for(
                _is("RagpulseFaithfulnessBelowFloor", "resolved", "support-bot-pager"), 240,
                f"the floor page of {SERVICE} resolved")
            assert resolved["annotations"]["runbook_url"] == links["runbook_url"]
        # Pages went to the service's team only, never to the catch-all pager.
        pagers = {r for r, p in webhook_receiver.notifications() if p["commonLabels"].get("severity") == "page"}
        assert pagers == {"support-bot-pager"}, pagers
    finally:
        app.close()
        prom.stop()
        proc.stop()
        am.stop()

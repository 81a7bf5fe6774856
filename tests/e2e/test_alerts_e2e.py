"""End to end: real `ragpulse up` + real Prometheus with the shipped alert rules (windows and `for:`
scaled by 1/60 so an hour plays in a minute), real OTel SDK traffic. Faithful answers, then
unfaithful ones: the faithfulness alerts go firing in /api/v1/alerts; faithful again: they resolve
(all but the slow-burn ticket, which is meant to outlast a burst)."""

from __future__ import annotations

import threading
import time

import pytest
from otel_app import RagApp
from prometheus_server import PrometheusServer, prometheus_binary, rules_for_test, send_answers
from ragpulse_process import RagpulseProcess

pytestmark = pytest.mark.prometheus

SERVICE = "e2e-shop"
# Alerts that must resolve once faithful answers are back.
RESOLVING_ALERTS = {
    "RagpulseFaithfulnessBelowFloor",
    "RagpulseFaithfulnessDroppedVsBaseline",
    "RagpulseFaithfulnessErrorBudgetBurnFast",
    "RagpulseScoreDrift",
}
# The slow-burn ticket fires too, and by design stays while its 6h window (6 min here) still holds
# the burst: the budget was spent, someone should look even after quality came back.
FAITHFULNESS_ALERTS = RESOLVING_ALERTS | {"RagpulseFaithfulnessErrorBudgetBurnSlow"}
# Scaled windows: 5m -> 5s, 15m -> 15s, 1h -> 60s, 7d -> 168 min.
TIME_FACTOR = 1 / 60


class Traffic:
    """Sends answers continuously in a thread; `faithful` can be flipped while it runs."""

    def __init__(self, app: RagApp) -> None:
        self.app = app
        self.faithful = True
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            send_answers(self.app, 1, self.faithful, rate_per_s=5.0, start=self.sent)
            self.sent += 1

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def states(prom: PrometheusServer) -> dict[str, str]:
    """alertname -> state of the service's faithfulness alerts ("firing" wins over "pending"); the
    drift alert of other metrics (unfaithful answers also move answer relevancy) is left out."""
    out: dict[str, str] = {}
    for a in prom.alerts():
        labels = a["labels"]
        if labels.get("service") == SERVICE and labels.get("metric", "faithfulness") == "faithfulness":
            if out.get(labels["alertname"]) != "firing":
                out[labels["alertname"]] = a["state"]
    return out


def wait_until(prom: PrometheusServer, done, timeout_s: float, what: str) -> dict[str, str]:
    deadline = time.monotonic() + timeout_s
    seen: dict[str, str] = {}
    while time.monotonic() < deadline:
        seen = states(prom)
        if done(seen):
            return seen
        time.sleep(1)
    raise AssertionError(f"{what} within {timeout_s} s; alerts of {SERVICE}: {seen}")


def test_faithfulness_alerts_fire_and_resolve(tmp_path):
    prometheus_binary()
    proc = RagpulseProcess(tmp_path, settings={
        # A small warm-up so the drift detector arms within the faithful phase.
        "drift": {"min_samples": 60, "recent_window": 30},
    })
    prom = PrometheusServer(tmp_path, [proc.metrics], rule_files=rules_for_test(tmp_path, TIME_FACTOR)).start()
    app = RagApp(SERVICE, "grpc", proc.grpc)
    try:
        prom.wait_for_target_up()
        with Traffic(app) as traffic:
            # Faithful phase: long enough for the baseline (the 7-day window) and the drift detector.
            proc.wait_for("ragpulse_records_scored_total", 150, timeout_s=120, service=SERVICE)
            assert states(prom) == {}, "faithful traffic must not alert"

            traffic.faithful = False
            fired = wait_until(prom, lambda s: all(s.get(a) == "firing" for a in FAITHFULNESS_ALERTS),
                               timeout_s=240, what="faithfulness alerts not all firing")
            assert FAITHFULNESS_ALERTS <= fired.keys()

            traffic.faithful = True
            wait_until(prom, lambda s: not (RESOLVING_ALERTS & s.keys()),
                       timeout_s=240, what="faithfulness alerts not all resolved")
        # The pipeline itself stayed healthy through it all.
        pipeline = {a["labels"]["alertname"] for a in prom.alerts()} - FAITHFULNESS_ALERTS
        assert pipeline == set(), pipeline
    finally:
        app.close()
        prom.stop()
        proc.stop()

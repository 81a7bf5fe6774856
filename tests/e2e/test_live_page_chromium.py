"""The built-in live page in real headless Chromium (Debian's chromium), driven over the Chrome
DevTools protocol on a pipe (--remote-debugging-pipe: no extra Python package, no port): the page
of a live `ragpulse up` loads without console errors, its charts show the run's data, record text
stays text, and a screenshot is saved as an artifact (RAGPULSE_ARTIFACTS, default ./artifacts)."""

from __future__ import annotations

import base64
import fcntl
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from otel_app import RagApp
from prometheus_server import REPO, send_answers
from ragpulse_process import RagpulseProcess

pytestmark = pytest.mark.browser

# An unfaithful answer carrying markup: it must show as text on the page, never become an element.
HOSTILE_ANSWER = 'The warranty is 99 years. <img src=x onerror="window.__pwned=1"> Shipping is free to Mars.'
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--remote-debugging-pipe"]


def chromium_binary() -> str:
    path = shutil.which("chromium")
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("chromium not found: apt-get install -y chromium")
        pytest.skip("chromium not found: apt-get install -y chromium")
    return path


class Chromium:
    """Headless Chromium and a minimal CDP client: Chromium reads commands on fd 3 and writes
    replies and events on fd 4, each a JSON message ended by a NUL byte."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        # Move the child's ends above 10 so the dup2 onto 3 and 4 below cannot clobber one of them.
        child_r = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        child_w = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
        for fd in (to_chrome_r, from_chrome_w):
            os.close(fd)

        def wire_fds() -> None:
            os.dup2(child_r, 3)
            os.dup2(child_w, 4)

        self.proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=wire_fds, close_fds=False,
        )
        os.close(child_r)
        os.close(child_w)
        self._out = os.fdopen(to_chrome_w, "wb", buffering=0)
        self._in = os.fdopen(from_chrome_r, "rb", buffering=0)
        self._next_id = 0
        self._replies: dict[int, dict[str, Any]] = {}
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.session = ""

    def _read(self) -> None:
        buffer = b""
        while chunk := self._in.read(65536):
            buffer += chunk
            while b"\0" in buffer:
                raw, buffer = buffer.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()

    def send(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 30.0,
             browser: bool = False) -> dict[str, Any]:
        self._next_id += 1
        msg: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if self.session and not browser:
            msg["sessionId"] = self.session
        self._out.write(json.dumps(msg).encode() + b"\0")
        with self._cond:
            if not self._cond.wait_for(lambda: self._next_id in self._replies, timeout_s):
                raise TimeoutError(f"no CDP reply to {method}")
            reply = self._replies.pop(self._next_id)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def open_page(self, width: int, height: int) -> None:
        target = self.send("Target.createTarget", {"url": "about:blank"}, browser=True)["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True},
                                 browser=True)["sessionId"]
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})

    def evaluate(self, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.25)
        raise AssertionError(f"page never satisfied {expression!r}")

    def console_errors(self) -> list[str]:
        errors = []
        with self._cond:
            events = list(self.events)
        for e in events:
            p = e.get("params", {})
            if e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in p.get("args", [])))
            elif e.get("method") == "Runtime.exceptionThrown":
                errors.append(json.dumps(p.get("exceptionDetails", {}))[:500])
            elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                errors.append(f"{p['entry'].get('source')}: {p['entry'].get('text')} {p['entry'].get('url', '')}")
        return errors

    def close(self) -> None:
        try:
            self.send("Browser.close", browser=True, timeout_s=5)
        except (OSError, TimeoutError, RuntimeError):
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._out.close()


def test_live_page_in_chromium(tmp_path):
    binary = chromium_binary()
    proc = RagpulseProcess(tmp_path, settings={"drift": {"min_samples": 20, "recent_window": 20}})
    browser = None
    try:
        apps = {s: RagApp(s, "http", proc.http) for s in ("shop", "社内ヘルプデスク")}
        send_answers(apps["shop"], 30, faithful=True, rate_per_s=20)
        send_answers(apps["社内ヘルプデスク"], 30, faithful=False, rate_per_s=20)
        apps["shop"].answer("What is the warranty?", ["The warranty lasts two years."], HOSTILE_ANSWER)
        for app in apps.values():
            app.close()
        proc.wait_for("ragpulse_records_scored_total", 61)
        base = f"http://{proc.metrics}"
        with urllib.request.urlopen(f"{base}/", timeout=5) as r:
            html = r.read().decode()
        # Offline-safe: nothing the page loads comes from another origin.
        assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html

        browser = Chromium(binary, tmp_path / "profile")
        browser.open_page(1400, 2200)
        browser.send("Page.navigate", {"url": f"{base}/"})
        # Charts: one per service, each with a drawn line of real data points.
        browser.wait_for("document.querySelectorAll('#quality svg.chart path.line').length >= 2")
        points = browser.evaluate(
            "[...document.querySelectorAll('#quality svg.chart')].map(s => +s.dataset.points)")
        assert len(points) == 2 and all(p > 0 for p in points)
        assert browser.evaluate("document.querySelectorAll('#volume svg.chart path.line').length") == 2
        services = browser.evaluate("[...document.querySelectorAll('#quality figcaption')].map(f => f.textContent)")
        assert set(services) == {"shop", "社内ヘルプデスク"}
        # Each metric's line in the colour the server gives it (scorer/web/metric_styles.py).
        with urllib.request.urlopen(f"{base}/api/summary", timeout=5) as r:
            styles = json.load(r)["metrics"]
        lines = browser.evaluate("[...document.querySelectorAll('#quality path.line')]"
                                 ".map(p => [p.dataset.series, p.getAttribute('stroke')])")
        assert {m for m, _ in lines} == {"faithfulness", "answer_relevancy", "context_relevancy"}
        assert all(color == styles[m]["color"] for m, color in lines), lines
        # A record's scores are marked bad by their own direction and threshold. The local judge
        # gives no aspect verdicts, so the page's own recordDetail() draws a record made up here.
        marked = browser.evaluate("""Object.fromEntries([...recordDetail({record_id: "r", trace_id: "t", text: null,
            metrics: {selfcheck: {value: 0.2}, context_recall: {value: 0.9}, "aspect:harmfulness": {value: 1},
                      "aspect:coherence": {value: 1}, "aspect:polite": {value: 0}}})[0].querySelectorAll("span")]
            .map((s) => [s.dataset.metric, s.className]))""")
        assert marked == {"selfcheck": "low", "context_recall": "", "aspect:harmfulness": "low",
                          "aspect:coherence": "", "aspect:polite": ""}
        # Drift table, volume totals and the low-faithfulness records with unsupported statements.
        assert browser.evaluate("document.querySelectorAll('#drift tbody tr').length") >= 2
        volume = browser.evaluate("document.querySelector('#volume-table tbody').textContent")
        assert "社内ヘルプデスク" in volume and "shop" in volume
        browser.wait_for("document.querySelectorAll('#low .record li').length > 0")
        low_text = browser.evaluate("document.getElementById('low').textContent")
        assert "5000メートル" in low_text or "北海道" in low_text
        # Markup in record text stays text.
        assert "<img src=x" in low_text
        assert browser.evaluate("document.querySelectorAll('#low img').length") == 0
        assert browser.evaluate("window.__pwned === undefined")
        assert browser.console_errors() == []

        shot = base64.b64decode(browser.send("Page.captureScreenshot", {"format": "png"})["data"])
        assert shot.startswith(b"\x89PNG") and len(shot) > 10_000
        artifacts = Path(os.environ.get("RAGPULSE_ARTIFACTS", REPO / "artifacts"))
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "live-page.png").write_bytes(shot)
    finally:
        if browser is not None:
            browser.close()
        proc.stop()


# Service names that broke or could break a page using plain objects as maps, or markup as text.
HOSTILE_SERVICES = ["toString", "__proto__", "constructor", "hasOwnProperty", "valueOf",
                    '<img src=x onerror="window.__pwned=1">', "<script>window.__pwned=2</script>",
                    "x" * 1_000_000]


def test_live_page_survives_any_service_name(tmp_path):
    binary = chromium_binary()
    proc = RagpulseProcess(tmp_path)
    browser = None
    try:
        for service in [*HOSTILE_SERVICES, "shop"]:
            app = RagApp(service, "http", proc.http)
            send_answers(app, 2, faithful=service == "shop", rate_per_s=50)
            app.close()
        proc.wait_for("ragpulse_records_scored_total", 2 * (len(HOSTILE_SERVICES) + 1))

        browser = Chromium(binary, tmp_path / "profile")
        browser.open_page(1400, 2200)
        browser.send("Page.navigate", {"url": f"http://{proc.metrics}/"})
        browser.wait_for(f"document.querySelectorAll('#quality figcaption').length === {len(HOSTILE_SERVICES) + 1}")
        captions = browser.evaluate("[...document.querySelectorAll('#quality figcaption')].map(f => f.textContent)")
        short = [s if len(s) <= 120 else s[:120] + "…" for s in HOSTILE_SERVICES]
        assert sorted(captions) == sorted([*short, "shop"])
        # The 1 MB name reaches the page as its label (cut to prometheus.label_max_chars, 128),
        # shown cut and whole in the title.
        assert browser.evaluate("[...document.querySelectorAll('#quality figcaption')]"
                                ".some(f => f.title === 'x'.repeat(127) + '…')")
        volume = browser.evaluate("[...document.querySelectorAll('#volume-table tbody td:first-child')]"
                                  ".map(td => td.textContent)")
        assert sorted(volume) == sorted([*short, "shop"])
        browser.wait_for("document.querySelectorAll('#low .record').length > 0")
        assert "updated" in browser.evaluate("document.getElementById('status').textContent")
        # A second refresh works too (the old page failed from the first one on).
        browser.evaluate("refresh()")
        browser.wait_for("document.getElementById('status').className === 'status'")
        # No markup from a name became an element, no script ran, no prototype was touched.
        assert browser.evaluate("document.querySelectorAll('main img, main script').length") == 0
        assert browser.evaluate("window.__pwned === undefined")
        assert browser.evaluate("Object.keys(Object.prototype).length === 0")
        assert browser.evaluate("({}).toString === Object.prototype.toString")
        assert browser.console_errors() == []
    finally:
        if browser is not None:
            browser.close()
        proc.stop()


TRACE_URL = "http://jaeger.example:16686/trace/{trace_id}?uiFind={span_id}"
HELPDESK = "社内ヘルプデスク"
# Half faithful: the first statement is in the context, the second is not; a drill-down shows one
# context sentence marked as evidence and one as the closest evidence of an unsupported statement.
MIXED = ("富士山の標高は？",
         ["富士山は日本で最も高い山で、標高は3776メートルです。山梨県と静岡県にまたがっています。",
          "富士山は2013年に世界文化遺産に登録されました。"],
         "富士山の標高は3776メートルです。2013年に世界自然遺産として北海道で登録され、毎年噴火しています。")


def test_drill_down_in_chromium(tmp_path):
    """An alert's link (/?service=...&at=...) opens the records of that service around that time;
    a record opens to its question, contexts with the evidence marked, the statements' verdicts,
    its scores and judge, and a link to its trace; filters narrow the list and stay in the URL."""
    binary = chromium_binary()
    proc = RagpulseProcess(tmp_path, settings={"page": {"trace_url": TRACE_URL}})
    browser = None
    try:
        shop, helpdesk = RagApp("shop", "http", proc.http), RagApp(HELPDESK, "http", proc.http)
        send_answers(shop, 6, faithful=True, rate_per_s=20)
        send_answers(helpdesk, 6, faithful=False, rate_per_s=20)
        trace_id = helpdesk.answer(*MIXED, **{"rag.route": "/kb", "rag.model": "gpt-ja"})
        helpdesk.answer("What is the warranty?", ["The warranty lasts two years."], HOSTILE_ANSWER)
        for app in (shop, helpdesk):
            app.close()
        proc.wait_for("ragpulse_records_scored_total", 14)

        browser = Chromium(binary, tmp_path / "profile")
        browser.open_page(1100, 1600)
        at = int(time.time())
        browser.send("Page.navigate", {"url": f"http://{proc.metrics}/?service={urllib.parse.quote(HELPDESK)}&at={at}"})
        browser.wait_for("document.querySelectorAll('#records details.rec').length === 8")
        # Filtered to the alert's service and its time: the filter shows it, the list holds only it.
        assert browser.evaluate("document.querySelector('#filters [name=service]').value") == HELPDESK
        assert browser.evaluate("document.querySelector('#filters [name=from]').value") != ""
        summaries = browser.evaluate("[...document.querySelectorAll('#records details.rec > summary')]"
                                     ".map(s => s.textContent)")
        assert all(HELPDESK in s and "shop" not in s for s in summaries)

        # Open the half-faithful record.
        mixed = f"#records details[data-record-id^='{trace_id}']"
        browser.evaluate(f"document.querySelector(\"{mixed}\").open = true")
        browser.wait_for(f"document.querySelector(\"{mixed} .drill-body h3\") !== null")
        body = f"document.querySelector(\"{mixed} .drill-body\")"
        assert browser.evaluate(f"{body}.querySelector('.question').textContent") == MIXED[0]
        assert browser.evaluate(f"{body}.querySelector('.answer').textContent") == MIXED[2]
        assert browser.evaluate(f"{body}.querySelectorAll('.contexts > li').length") == 2
        verdicts = browser.evaluate(f"[...{body}.querySelectorAll('.statements .verdict')].map(v => v.className)")
        assert "verdict supported" in verdicts and "verdict unsupported" in verdicts
        # The matched context sentences are marked, numbered after their statements.
        marks = browser.evaluate(f"[...{body}.querySelectorAll('.contexts mark.ev')]"
                                 ".map(m => [m.className, m.dataset.n, m.textContent])")
        assert ["ev supported", "1", "富士山は日本で最も高い山で、標高は3776メートルです。"] in marks, marks
        assert ["ev unsupported", "2", "富士山は2013年に世界文化遺産に登録されました。"] in marks, marks
        scores = browser.evaluate(f"{body}.querySelector('.scores').textContent")
        assert "faithfulness" in scores and "judge local" in browser.evaluate(f"{body}.textContent")
        link = browser.evaluate(f"{body}.querySelector('a.trace-link').href")
        assert link.startswith(f"http://jaeger.example:16686/trace/{trace_id}?uiFind=")

        # An open record stays open across refreshes.
        browser.evaluate("refresh()")
        time.sleep(1)
        assert browser.evaluate(f"document.querySelector(\"{mixed}\").open") is True

        # The hostile record: its markup shows as text once opened.
        browser.evaluate("[...document.querySelectorAll('#records details.rec')].forEach(d => d.open = true)")
        browser.wait_for("[...document.querySelectorAll('#records .answer')].some(a => a.textContent.includes('<img'))")
        assert browser.evaluate("document.querySelectorAll('main img').length") == 0
        assert browser.evaluate("window.__pwned === undefined")
        browser.evaluate("[...document.querySelectorAll('#records details.rec')]"
                         f".forEach(d => d.open = d.matches(\"{mixed}\"))")

        # The screenshot of the drill-down (docs/when-paged.md).
        rect = browser.evaluate("(() => { const r = document.getElementById('records-section')"
                                ".getBoundingClientRect(); return [r.x, r.y + scrollY, r.width, r.height]; })()")
        shot = base64.b64decode(browser.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": rect[0], "y": rect[1], "width": rect[2], "height": min(rect[3], 1400), "scale": 1},
        })["data"])
        assert shot.startswith(b"\x89PNG") and len(shot) > 10_000
        artifacts = Path(os.environ.get("RAGPULSE_ARTIFACTS", REPO / "artifacts"))
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "live-page-drill-down.png").write_bytes(shot)

        # A score range narrows the list and goes into the URL.
        browser.evaluate("(() => { const f = document.getElementById('filters'); f.elements.max.value = '0.4';"
                         " f.dispatchEvent(new Event('change')); })()")
        browser.wait_for("location.search.includes('max=0.4')")
        browser.wait_for("document.querySelectorAll('#records details.rec').length < 8")
        assert browser.console_errors() == []
    finally:
        if browser is not None:
            browser.close()
        proc.stop()


def test_drill_down_shows_every_judges_view_of_a_cascaded_record(tmp_path):
    """A record the cascade sent to the expensive judge (scores message 1.1): each score names its
    judge beside the offline judge's, and a metric the expensive judge failed on shows the offline
    score, marked as the offline judge's. The page is served as `ragpulse up` serves it, from a
    scores message as the worker writes it."""
    from prometheus_client import CollectorRegistry

    from ragpulse.core.wire import Record, Sampling, scores_message
    from ragpulse.scorer.export.http_server import ScorerHttpServer
    from ragpulse.scorer.export.sinks import RecentDeadLetters, RecentScores
    from ragpulse.scorer.observer import ScoredRecord
    from ragpulse.scorer.score import MetricOutcome
    from ragpulse.scorer.web.history import History
    from ragpulse.scorer.web.page import LivePage

    binary = chromium_binary()
    registry, scores = CollectorRegistry(), RecentScores()
    history = History(registry, {})
    rec = Record("0af7651916cd43dd8448eb211c80319c", "00f067aa0ba902b7", "shop", "q", ["c"], "a",
                 time.time_ns(), Sampling(1.0, 1.0, "default"))
    shown = {"faithfulness": MetricOutcome(None, error="malformed_reply"), "answer_relevancy": MetricOutcome(0.9)}
    offline = {"faithfulness": MetricOutcome(0.25), "answer_relevancy": MetricOutcome(0.7)}
    history.on_scores(ScoredRecord(rec, shown, 0.01, "openai", judge_model="gpt-4o-mini"))
    scores.publish(rec.id, scores_message(
        rec, {k: {**o.to_dict(), "judge": "openai"} for k, o in shown.items()},
        {"name": "openai", "model": "gpt-4o-mini"}, {}, 0.01,
        {"judge": {"name": "local", "model": "lexical"},
         "metrics": {k: {**o.to_dict(), "judge": "local"} for k, o in offline.items()}}))
    page = LivePage(history, scores, RecentDeadLetters(), None, registry)
    server = ScorerHttpServer("127.0.0.1", 0, registry, page.handle)
    server.start()
    browser = None
    try:
        browser = Chromium(binary, tmp_path / "profile")
        browser.open_page(1100, 1200)
        browser.send("Page.navigate", {"url": f"http://{server.endpoint}/"})
        browser.wait_for("document.querySelectorAll('#records details.rec').length === 1")
        browser.evaluate("document.querySelector('#records details.rec').open = true")
        browser.wait_for("document.querySelector('#records .drill-body .scores') !== null")
        spans = browser.evaluate("[...document.querySelectorAll('#records .drill-body .scores span')]"
                                 ".map(s => [s.dataset.metric, s.dataset.judge, s.className, s.textContent])")
        by_metric = {m: (judge, cls, text) for m, judge, cls, text in spans}
        assert by_metric["faithfulness"] == (
            "local", "fallback low", "faithfulness 0.250 (offline judge local: openai failed, malformed_reply)")
        assert by_metric["answer_relevancy"] == ("openai", "", "answer_relevancy 0.900 (openai; offline 0.700)")
        assert browser.console_errors() == []
    finally:
        if browser is not None:
            browser.close()
        server.stop()

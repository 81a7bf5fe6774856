"""The shipped Prometheus rules: valid, unit-tested with promtool (firing and not firing for every
alert), and each alert has a runbook that exists in docs/dashboards.md."""

from __future__ import annotations

import re
import subprocess

import pytest
import yaml
from prometheus_server import REPO, RULES_DIR, promtool_binary

TESTS_DIR = REPO / "deploy" / "prometheus" / "tests"
DOC = REPO / "docs" / "dashboards.md"


def alert_rules() -> list[dict]:
    rules = []
    for path in sorted(RULES_DIR.glob("*.yml")):
        for group in yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]:
            rules += [r for r in group["rules"] if "alert" in r]
    return rules


@pytest.mark.prometheus
def test_promtool_check_rules_and_config():
    promtool = promtool_binary()
    files = sorted(str(p) for p in RULES_DIR.glob("*.yml"))
    out = subprocess.run([promtool, "check", "rules", *files], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    out = subprocess.run([promtool, "check", "config", str(REPO / "deploy/prometheus/prometheus.yml")],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.prometheus
def test_promtool_unit_tests_pass():
    promtool = promtool_binary()
    files = sorted(str(p) for p in TESTS_DIR.glob("*_test.yml"))
    assert files
    out = subprocess.run([promtool, "test", "rules", *files], capture_output=True, text=True, cwd=REPO)
    assert out.returncode == 0, out.stdout + out.stderr


def test_every_alert_is_tested_firing_and_not_firing():
    firing: set[str] = set()
    silent: set[str] = set()
    for path in TESTS_DIR.glob("*_test.yml"):
        for case in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for check in case.get("alert_rule_test", []):
                (firing if check.get("exp_alerts") else silent).add(check["alertname"])
    names = {r["alert"] for r in alert_rules()}
    assert names - firing == set(), "alerts without a firing test"
    assert names - silent == set(), "alerts without a not-firing test"


def test_every_alert_has_a_runbook_section_and_severity():
    anchors = {re.sub(r"[^a-z0-9-]", "", h.strip().lower().replace(" ", "-"))
               for h in re.findall(r"^#+ (.+)$", DOC.read_text(encoding="utf-8"), flags=re.M)}
    for rule in alert_rules():
        # The docs' base is an external label (runbook_base_url); unset, the repository's docs/.
        url = re.sub(r'^\{\{ or \$externalLabels\.runbook_base_url "docs" \}\}', "docs",
                     rule["annotations"]["runbook_url"])
        path, _, anchor = url.partition("#")
        assert (REPO / path).exists(), url
        assert anchor in anchors, f"{rule['alert']}: no section #{anchor} in docs/dashboards.md"
        assert rule["labels"]["severity"] in ("page", "ticket")
        assert rule["annotations"]["summary"] and rule["annotations"]["description"]


def test_rules_use_only_exported_families():
    """Every ragpulse_* name in the rules is a family the code exports (no typo silently alerting on
    nothing): the declared families, which tests/core/test_telemetry_catalog.py holds to what the code registers."""
    from ragpulse.core.telemetry_catalog import FAMILIES

    exported = set()
    for family in FAMILIES:
        suffixes = ["_bucket", "_count", "_sum"] if family.kind == "histogram" else [""]
        exported |= {family.name + s for s in suffixes}
    text = "".join(p.read_text(encoding="utf-8") for p in RULES_DIR.glob("*.yml"))
    used = set(re.findall(r"\b(ragpulse_[a-z_]+)\b", text))
    assert used - exported == set()

"""deploy/k8s: the manifests parse, and they reference the real ports, flags and config keys of the
code (configs are loaded with ragpulse's own config loader; container args are parsed with the
real CLI parser; ports, probes, monitors and the autoscaler agree with the configs)."""

from __future__ import annotations

import argparse
import ipaddress
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ragpulse.cli import build_parser
from ragpulse.config import load_config
from ragpulse.core.endpoints import parse_endpoint

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"


def kustomization() -> dict:
    return yaml.safe_load((K8S / "kustomization.yaml").read_text(encoding="utf-8"))


def objects() -> list[dict]:
    docs = []
    for name in kustomization()["resources"]:
        docs += [d for d in yaml.safe_load_all((K8S / name).read_text(encoding="utf-8")) if d]
    return docs


def find(kind: str, name: str) -> dict:
    matches = [o for o in objects() if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(matches) == 1, f"{kind}/{name}: {len(matches)} found"
    return matches[0]


def config_of(configmap: str):
    for gen in kustomization()["configMapGenerator"]:
        if gen["name"] == configmap:
            (entry,) = gen["files"]
            key, _, path = entry.partition("=")
            assert key == "config.yaml"
            # The real loader: an unknown key or a bad value raises ConfigError naming it.
            return load_config(K8S / path, environ={})
    raise AssertionError(f"no configMapGenerator {configmap}")


def container(deployment: str, name: str) -> dict:
    spec = find("Deployment", deployment)["spec"]["template"]["spec"]
    (c,) = [c for c in spec["containers"] if c["name"] == name]
    return c


def parsed_args(c: dict) -> argparse.Namespace:
    # The real CLI parser: an unknown subcommand or flag exits with status 2.
    try:
        return build_parser().parse_args(c["args"])
    except SystemExit as e:
        raise AssertionError(f"container {c['name']}: args {c['args']} rejected by the ragpulse CLI") from e


def port_named(c: dict, name: str) -> int:
    (p,) = [p["containerPort"] for p in c["ports"] if p["name"] == name]
    return p


def test_all_resources_exist_and_parse():
    for name in kustomization()["resources"]:
        assert (K8S / name).exists(), name
    kinds = {o["kind"] for o in objects()}
    assert {"Namespace", "Deployment", "Service", "ServiceMonitor", "PodMonitor", "PrometheusRule",
            "ScaledObject"} <= kinds


def test_collector_sidecar_listens_on_localhost_and_matches_its_config():
    cfg = config_of("ragpulse-collector-config")
    for endpoint in (cfg.receiver.grpc_endpoint, cfg.receiver.http_endpoint):
        host, _ = parse_endpoint(endpoint, "receiver")
        assert host == "127.0.0.1", "the sidecar must accept spans from its own pod only"
    assert cfg.bus.kind == "kafka"
    c = container("example-rag-app", "ragpulse-collector")
    args = parsed_args(c)
    assert args.command == "collector" and args.config == Path("/etc/ragpulse/config.yaml")
    assert c["volumeMounts"][0]["mountPath"] == str(args.config.parent)
    _, metrics_port = parse_endpoint(cfg.prometheus.endpoint, "prometheus.endpoint")
    assert port_named(c, "collector-metrics") == metrics_port
    assert c["readinessProbe"]["httpGet"]["port"] == "collector-metrics"
    # The app in the same pod exports to the sidecar's OTLP HTTP port.
    app = container("example-rag-app", "app")
    env = {e["name"]: e["value"] for e in app["env"]}
    assert env["OTEL_EXPORTER_OTLP_ENDPOINT"] == f"http://{cfg.receiver.http_endpoint}"


def test_scorer_deployment_service_and_monitors_agree():
    cfg = config_of("ragpulse-scorer-config")
    c = container("ragpulse-scorer", "scorer")
    args = parsed_args(c)
    assert args.command == "scorer"
    _, port = parse_endpoint(cfg.prometheus.endpoint, "prometheus.endpoint")
    assert port_named(c, "metrics") == port
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    svc = find("Service", "ragpulse-scorer")
    pod_labels = find("Deployment", "ragpulse-scorer")["spec"]["template"]["metadata"]["labels"]
    assert svc["spec"]["selector"].items() <= pod_labels.items()
    assert svc["spec"]["ports"][0]["targetPort"] == "metrics" and svc["spec"]["ports"][0]["port"] == port
    sm = find("ServiceMonitor", "ragpulse-scorer")
    assert sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items()
    assert sm["spec"]["endpoints"][0]["port"] == "metrics"
    pm = find("PodMonitor", "ragpulse-collector")
    app_labels = find("Deployment", "example-rag-app")["spec"]["template"]["metadata"]["labels"]
    assert pm["spec"]["selector"]["matchLabels"].items() <= app_labels.items()
    assert pm["spec"]["podMetricsEndpoints"][0]["port"] == "collector-metrics"


def is_loopback(endpoint: str, where: str) -> bool:
    host, _ = parse_endpoint(endpoint, where)
    return host == "localhost" or ipaddress.ip_address(host).is_loopback


def test_record_text_stays_off_the_pod_network():
    """/metrics may listen on the pod IP for scraping; the live page, which shows questions and
    answers, only on loopback (kubectl port-forward) or not at all; nor is its port declared."""
    cfg = config_of("ragpulse-scorer-config")
    assert not is_loopback(cfg.prometheus.endpoint, "prometheus.endpoint"), "Prometheus must reach /metrics"
    if cfg.page.enabled:
        assert cfg.page.endpoint and is_loopback(cfg.page.endpoint, "page.endpoint"), \
            "the live page would be served beside /metrics on the pod network"
        _, page_port = parse_endpoint(cfg.page.endpoint, "page.endpoint")
        assert page_port not in [p["containerPort"] for p in container("ragpulse-scorer", "scorer")["ports"]]
    # The collector sidecar serves no page (`ragpulse collector`), and takes spans on loopback only.
    cfg = config_of("ragpulse-collector-config")
    assert parsed_args(container("example-rag-app", "ragpulse-collector")).command == "collector"
    assert all(is_loopback(e, "receiver") for e in (cfg.receiver.grpc_endpoint, cfg.receiver.http_endpoint))


def test_keda_scales_the_scorer_on_the_real_topic_and_group():
    cfg = config_of("ragpulse-scorer-config")
    so = find("ScaledObject", "ragpulse-scorer")
    assert so["spec"]["scaleTargetRef"]["name"] == "ragpulse-scorer"
    (trigger,) = so["spec"]["triggers"]
    assert trigger["type"] == "kafka"
    meta = trigger["metadata"]
    assert meta["consumerGroup"] == cfg.bus.kafka.group_id
    assert meta["topic"] == cfg.bus.kafka.records_topic
    assert meta["bootstrapServers"] == cfg.bus.kafka.bootstrap_servers
    assert so["spec"]["maxReplicaCount"] <= cfg.bus.kafka.records_partitions
    assert int(meta["lagThreshold"]) > 0


def test_prometheusrule_is_in_sync_with_the_rule_files():
    sys.path.insert(0, str(K8S))
    try:
        import sync_prometheusrule
    finally:
        sys.path.remove(str(K8S))
    assert (K8S / "prometheusrule.yaml").read_text(encoding="utf-8") == sync_prometheusrule.render(), \
        "run python deploy/k8s/sync_prometheusrule.py"
    rule = find("PrometheusRule", "ragpulse")
    assert rule["spec"] == sync_prometheusrule.prometheus_rule()["spec"]


def test_kubectl_kustomize_builds():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl not installed; the checks above do not need it")
    out = subprocess.run([kubectl, "kustomize", str(K8S)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    built = [d for d in yaml.safe_load_all(out.stdout) if d]
    assert all(d["metadata"].get("namespace") == "ragpulse" for d in built if d["kind"] != "Namespace")

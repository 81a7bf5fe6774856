"""deploy/compose cannot run here (no Docker); keep it consistent with the code it starts."""

from __future__ import annotations

from pathlib import Path

import yaml

from ragpulse.cli import build_parser
from ragpulse.config import load_config
from ragpulse.core.endpoints import parse_endpoint

COMPOSE = Path(__file__).resolve().parents[2] / "deploy" / "compose"


def test_compose_services_use_real_commands_settings_and_ports() -> None:
    doc = yaml.safe_load((COMPOSE / "docker-compose.yml").read_text())
    services = doc["services"]
    parser = build_parser()
    scrape = yaml.safe_load((COMPOSE / "prometheus.yml").read_text())
    targets = {t for job in scrape["scrape_configs"] for sc in job["static_configs"] for t in sc["targets"]}
    for name in ("collector", "scorer-1", "scorer-2"):
        service = services[name]
        args = parser.parse_args(service["command"])
        assert args.command in ("collector", "scorer")
        config = load_config(environ={k: str(v) for k, v in service["environment"].items()})
        assert config.bus.kind == "kafka"
        host, _ = parse_endpoint(config.bus.kafka.bootstrap_servers, "bootstrap")
        assert host in services  # the broker is a service of the project
        _, metrics_port = parse_endpoint(config.prometheus.endpoint, "prometheus")
        assert f"{name}:{metrics_port}" in targets
        # Prometheus sends the target's name as Host: the Host check must let it through.
        assert config.prometheus.guard("0.0.0.0").host_allowed(f"{name}:{metrics_port}")
        if args.command == "collector":
            published = {p.split(":")[1] for p in service["ports"]}
            for endpoint in (config.receiver.grpc_endpoint, config.receiver.http_endpoint):
                assert str(parse_endpoint(endpoint, "receiver")[1]) in published
            guard = config.receiver.guard("0.0.0.0")
            assert guard.host_allowed("localhost:4318") and guard.host_allowed(f"{name}:4318")
    for mount in services["prometheus"]["volumes"] + services["grafana"]["volumes"]:
        assert (COMPOSE / mount.split(":")[0]).exists(), mount

#!/usr/bin/env bash
# Build the peer for bench/peer_collector.py: the OpenTelemetry Collector with the OTLP receiver,
# the batch processor and the Kafka exporter (bench/otelcol-peer.yaml), by deploy/otelcol/build.sh.
# Measurement-only: the binary lives in $RAGPULSE_OTELCOL_HOME (default ~/.cache/ragpulse/otelcol)
# as otelcol-ragpulse-peer/bin/otelcol-ragpulse-peer, never in ragpulse's dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
exec bash deploy/otelcol/build.sh bench/otelcol-peer.yaml

#!/usr/bin/env bash
# Build the peer for bench/peer_collector.py: the OpenTelemetry Collector (otelcol) with exactly the
# components the comparison needs (OTLP receiver, batch processor, Kafka exporter), using the
# collector builder (ocb) from the Go module proxy. Measurement-only: the binary lives in
# $RAGPULSE_OTELCOL_HOME (default ~/.cache/ragpulse/otelcol), never in ragpulse's dependencies.
# Idempotent like deploy/kafka/fetch.sh: a second run with the same manifest does nothing.
#
#   bench/build_otelcol.sh          # -> ~/.cache/ragpulse/otelcol/bin/otelcol-ragpulse-peer
#
# Needs Go (1.24+; 1.26 used) and the Go module proxy. Cold build (empty Go module and build
# caches), measured 2026-12-01 on 2 cores at load average ~11 from other jobs: 8 min 46 s wall
# (builder install and sources ~1 min 50 s, modules ~20 s, compile 6 min 42 s); 46 MB binary. Warm: instant.
set -euo pipefail

ocb_version="v0.165.0"
home="${RAGPULSE_OTELCOL_HOME:-$HOME/.cache/ragpulse/otelcol}"
bin="$home/bin/otelcol-ragpulse-peer"

manifest="$(cat <<MANIFEST
dist:
  name: otelcol-ragpulse-peer
  description: OpenTelemetry Collector peer for ragpulse's bench/peer_collector.py
  output_path: $home/build
receivers:
  - gomod: go.opentelemetry.io/collector/receiver/otlpreceiver v0.165.0
processors:
  - gomod: go.opentelemetry.io/collector/processor/batchprocessor v0.165.0
exporters:
  - gomod: github.com/open-telemetry/opentelemetry-collector-contrib/exporter/kafkaexporter v0.165.1
MANIFEST
)"
stamp="$(printf '%s\n%s\n' "$ocb_version" "$manifest" | sha256sum | cut -c1-16)"

if [[ -x "$bin" && -f "$home/STAMP" && "$(cat "$home/STAMP")" == "$stamp" ]]; then
  echo "otelcol already built: $bin"
  exit 0
fi

command -v go >/dev/null || { echo "build_otelcol.sh: go is required" >&2; exit 1; }
mkdir -p "$home/bin"
start=$(date +%s)
GOBIN="$home/bin" go install "go.opentelemetry.io/collector/cmd/builder@$ocb_version"
printf '%s\n' "$manifest" > "$home/manifest.yaml"
rm -rf "$home/build"
"$home/bin/builder" --config="$home/manifest.yaml"
mv "$home/build/otelcol-ragpulse-peer" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$stamp" > "$home/STAMP"
echo "otelcol built in $(( $(date +%s) - start ))s: $bin"
ls -l "$bin"

#!/usr/bin/env bash
# Build an OpenTelemetry Collector (otelcol, Apache-2.0) with exactly the components a manifest
# names, using the collector builder (ocb) from the Go module proxy: no Docker, no prebuilt binary.
# The binary lands in $RAGPULSE_OTELCOL_HOME/<dist.name>/bin/<dist.name> (default home
# ~/.cache/ragpulse/otelcol). Idempotent: a second run with the same manifest does nothing.
#
#   deploy/otelcol/build.sh                              # deploy/otelcol/manifest.yaml: the Collector
#                                                        # the configs beside it and the tests use
#   deploy/otelcol/build.sh bench/otelcol-peer.yaml      # bench/peer_collector.py's peer
#
# Needs Go 1.24+ (1.26 used) and the Go module proxy. Every collector module of one manifest is of
# one release (core v0.165.0 with contrib v0.165.1). Cost on the project's 2-core machine:
# deploy/otelcol/manifest.yaml cold (empty Go module and build caches, builder already installed)
# 118 s, 72 s with the module cache warm; the peer's cold build at load ~11 from other jobs
# 8 min 46 s. The binaries are 39-46 MB. Go's own caches (GOMODCACHE, GOCACHE) are used.
set -euo pipefail

ocb_version="v0.165.0"
manifest_file="${1:-$(dirname "$0")/manifest.yaml}"
name="$(sed -n 's/^  name: *//p' "$manifest_file" | head -1)"
[[ -n "$name" ]] || { echo "build.sh: $manifest_file has no dist.name" >&2; exit 1; }
root="${RAGPULSE_OTELCOL_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ragpulse/otelcol}"
home="$root/$name"
bin="$home/bin/$name"
stamp="$( (echo "$ocb_version"; cat "$manifest_file") | sha256sum | cut -c1-16)"

if [[ -x "$bin" && -f "$home/STAMP" && "$(cat "$home/STAMP")" == "$stamp" ]]; then
  echo "otelcol already built: $bin"
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: go (1.24 or newer) is required" >&2; exit 1; }
mkdir -p "$home/bin" "$root/tools"
start=$(date +%s)
[[ -x "$root/tools/builder-$ocb_version" ]] || {
  GOBIN="$root/tools/bin.tmp" go install "go.opentelemetry.io/collector/cmd/builder@$ocb_version"
  mv "$root/tools/bin.tmp/builder" "$root/tools/builder-$ocb_version"
  rm -rf "$root/tools/bin.tmp"
}
# The manifest's output_path is this build's own directory (ocb has no flag for it).
rm -rf "$home/build"
sed "/^dist:/a\\  output_path: $home/build" "$manifest_file" | grep -v '^  output_path: [^/]' > "$home/manifest.yaml"
"$root/tools/builder-$ocb_version" --config="$home/manifest.yaml"
mv "$home/build/$name" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$stamp" > "$home/STAMP"
echo "otelcol built in $(( $(date +%s) - start ))s: $bin"

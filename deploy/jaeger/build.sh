#!/usr/bin/env bash
# Build Jaeger v2 (`cmd/jaeger`, Apache-2.0) from the Go module proxy into
# $RAGPULSE_JAEGER_HOME/bin/jaeger (default: ~/.cache/ragpulse/jaeger). The tests use it as the
# user's tracing backend, where the scorer writes its evaluations back (tests/support/jaeger_server.py).
# No Docker, no prebuilt binary: the pinned version's source from the Go module proxy, built with
# module and build caches of its own (deleted afterwards), so the user's Go caches are left alone.
# Needs Go 1.24 or newer. Idempotent: a second run with the same version does nothing.
#
#   deploy/jaeger/build.sh                    # the pinned version
#   JAEGER_VERSION=v1.76.0 deploy/jaeger/build.sh
#
# Cost, measured cold on the project's 2-core machine while other test runs kept it busy (load 9-11):
# 13 min wall to download ~1 GB of modules and compile (7.8 CPU-minutes), then 3 min to delete the
# caches, now in the background. The binary is 121 MB.
set -euo pipefail

home="${RAGPULSE_JAEGER_HOME:-${XDG_CACHE_HOME:-$HOME/.cache}/ragpulse/jaeger}"
# Go fetches only the module's v1.x tags (its path has no /v2); each tags the same commit as a
# Jaeger v2 release, and cmd/jaeger is the v2 binary.
version="${JAEGER_VERSION:-v1.76.0}"

if [[ -f "$home/VERSION" && "$(cat "$home/VERSION")" == "$version" && -x "$home/bin/jaeger" ]]; then
  echo "jaeger $version already in $home/bin"
  exit 0
fi

command -v go >/dev/null || { echo "build.sh: go (1.24 or newer) is required" >&2; exit 1; }

# Build into a fresh directory and swap it in: an interrupted build never leaves a binary that
# VERSION vouches for.
mkdir -p "$home"
# What an interrupted build or deletion left behind (the caches of an interrupted build stay: the
# retry goes on from them).
rm -rf "$home/bin.tmp" "$home"/.trash.*
export GOMODCACHE="$home/gomodcache" GOCACHE="$home/gocache" GOBIN="$home/bin.tmp"
export GOFLAGS="-trimpath -modcacherw" CGO_ENABLED=0
# Not `go install module@version`: Jaeger's go.mod has replace directives, which that refuses. The
# module's source is fetched from the proxy (checked against sum.golang.org) and built in place.
src="$(go mod download -json "github.com/jaegertracing/jaeger@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
[[ -d "$src" ]] || { echo "build.sh: go mod download gave no source directory" >&2; exit 1; }
(cd "$src" && go build -o "$GOBIN/jaeger" ./cmd/jaeger)
rm -rf "$home/bin"
mv "$home/bin.tmp" "$home/bin"
# The module and build caches (~3 GB) would only speed up building another version. Deleting them
# took 3 minutes of a busy disk: they are moved aside at once and deleted in the background, which
# nothing waits for.
trash="$home/.trash.$$"
mkdir "$trash"
mv "$home/gomodcache" "$home/gocache" "$trash/"
nohup rm -rf "$trash" >/dev/null 2>&1 &
echo "$version" > "$home/VERSION"
echo "jaeger $version: $home/bin/jaeger"

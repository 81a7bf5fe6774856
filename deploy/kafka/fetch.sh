#!/usr/bin/env bash
# Fetch the Apache Kafka broker (org.apache.kafka:kafka_2.13) and its runtime dependencies from
# Maven Central into $RAGPULSE_KAFKA_HOME/libs (default: <repo>/.cache/kafka/libs). No Docker, no
# tarball: the jars are all `java -cp 'libs/*' kafka.Kafka` needs. Idempotent: a second run with the
# same version does nothing.
#
#   deploy/kafka/fetch.sh                 # default version from pom.xml
#   KAFKA_VERSION=3.9.1 deploy/kafka/fetch.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
home="${RAGPULSE_KAFKA_HOME:-$repo/.cache/kafka}"
version="${KAFKA_VERSION:-$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/pom.xml")}"

if [[ -f "$home/VERSION" && "$(cat "$home/VERSION")" == "$version" ]] && compgen -G "$home/libs/kafka_2.13-*.jar" >/dev/null; then
  echo "kafka $version already in $home/libs"
  exit 0
fi

command -v mvn >/dev/null || { echo "fetch.sh: mvn (Apache Maven) is required" >&2; exit 1; }
command -v java >/dev/null || { echo "fetch.sh: java (17 or newer) is required" >&2; exit 1; }

# Fetch into a fresh directory and swap it in, so an interrupted fetch never leaves a half set of
# jars that the broker would start with and fail on in obscure ways.
tmp="$home/libs.tmp"
rm -rf "$tmp"
mkdir -p "$home"
mvn -q -B -f "$here/pom.xml" -Dkafka.version="$version" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp"
rm -rf "$home/libs"
mv "$tmp" "$home/libs"
echo "$version" > "$home/VERSION"
echo "kafka $version: $(ls "$home/libs" | wc -l) jars in $home/libs"

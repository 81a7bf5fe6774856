#!/usr/bin/env bash
# A single Apache Kafka broker in KRaft mode (broker and controller in one JVM) on 127.0.0.1, from
# the jars that fetch.sh put in $RAGPULSE_KAFKA_HOME/libs. For tests and for trying ragpulse's
# Kafka mode without Docker; not a production deployment.
#
#   broker.sh start PORT DATADIR [CONTROLLER_PORT]   format DATADIR once, start, wait until ready
#   broker.sh wait DATADIR [TIMEOUT_S]               wait until the broker accepts requests
#   broker.sh stop DATADIR                           SIGTERM (clean shutdown), SIGKILL after 60 s
#
# Restarting with the same DATADIR keeps the topics and offsets (the fault tests rely on it).
# Environment: RAGPULSE_KAFKA_HOME (jar cache), KAFKA_HEAP_OPTS (default -Xmx512m -Xms256m),
# KAFKA_VERSION is not read here: the broker is whatever fetch.sh fetched.
# KAFKA_SASL_PORT and KAFKA_SASL_USERS ("name:password,..."), read when DATADIR is first formatted:
# a second client listener on that port that takes SASL/PLAIN logins (for trying and testing
# ragpulse's bus.kafka.security_protocol: SASL_PLAINTEXT).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
home="${RAGPULSE_KAFKA_HOME:-$repo/.cache/kafka}"
libs="$home/libs"

die() { echo "broker.sh: $*" >&2; exit 1; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

pid_alive() { [[ -f "$1/broker.pid" ]] && kill -0 "$(cat "$1/broker.pid")" 2>/dev/null; }

java_cmd() {
  # Small heap: the broker shares a small machine with the collector and scorers in tests.
  # shellcheck disable=SC2086
  exec java ${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m} -XX:+UseG1GC -Djava.awt.headless=true \
    -Dlog4j2.configurationFile="$here/log4j2.properties" -cp "$libs/*" "$@"
}

write_config() {
  local port="$1" datadir="$2" cport="$3"
  local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
  local advertised="PLAINTEXT://127.0.0.1:$port"
  local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
  if [[ -n "${KAFKA_SASL_PORT:-}" ]]; then
    listeners="$listeners,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT"
    advertised="$advertised,SASL_PLAINTEXT://127.0.0.1:$KAFKA_SASL_PORT"
    protocols="$protocols,SASL_PLAINTEXT:SASL_PLAINTEXT"
  fi
  cat > "$datadir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$datadir/logs
# One broker: internal topics cannot have more than one replica.
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# ragpulse creates its topics with the admin client; a typo in a topic name must fail, not
# silently create a one-partition topic.
auto.create.topics.enable=false
num.partitions=1
# Tests start and stop consumers often; the default 3 s delay would slow every first join.
group.initial.rebalance.delay.ms=0
num.network.threads=2
num.io.threads=4
PROPS
  if [[ -n "${KAFKA_SASL_PORT:-}" ]]; then
    # SASL/PLAIN users as "name:password,name2:password2" (clients only; brokers talk PLAINTEXT).
    local users="" pair
    for pair in ${KAFKA_SASL_USERS//,/ }; do users="$users user_${pair%%:*}=\"${pair#*:}\""; done
    cat >> "$datadir/server.properties" <<PROPS
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required$users;
PROPS
  fi
}

cmd_wait() {
  local datadir="$1" timeout="${2:-90}" port
  port="$(sed -n 's/^advertised.listeners=PLAINTEXT:\/\/127.0.0.1:\([0-9]*\).*$/\1/p' "$datadir/server.properties")"
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    pid_alive "$datadir" || die "broker exited; last lines of $datadir/broker.log:
$(tail -n 30 "$datadir/broker.log" 2>/dev/null)"
    # The log line comes after the listeners are bound and the metadata is loaded; the TCP probe
    # guards against a stale line from a previous run of the same DATADIR (the log is truncated
    # on start, but be safe).
    if grep -q "Kafka Server started" "$datadir/broker.log" 2>/dev/null \
       && (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "kafka broker ready on 127.0.0.1:$port (pid $(cat "$datadir/broker.pid"))"
      return 0
    fi
    sleep 0.2
  done
  die "broker on 127.0.0.1:$port not ready after ${timeout}s; see $datadir/broker.log"
}

cmd_start() {
  local port="${1:?usage: broker.sh start PORT DATADIR [CONTROLLER_PORT]}"
  local datadir="${2:?usage: broker.sh start PORT DATADIR [CONTROLLER_PORT]}"
  compgen -G "$libs/kafka_2.13-*.jar" >/dev/null || die "no Kafka jars in $libs; run deploy/kafka/fetch.sh"
  command -v java >/dev/null || die "java (17 or newer) is required"
  mkdir -p "$datadir"
  datadir="$(cd "$datadir" && pwd)"
  pid_alive "$datadir" && die "a broker is already running for $datadir (pid $(cat "$datadir/broker.pid"))"

  if [[ ! -f "$datadir/logs/meta.properties" ]]; then
    write_config "$port" "$datadir" "${3:-$(free_port)}"
    # A fixed cluster id per data dir; formatting is what makes the data dir a KRaft log.
    local cluster_id
    cluster_id="$(cd "$datadir" && (java_cmd kafka.tools.StorageTool random-uuid) 2>/dev/null | tail -n 1)"
    (java_cmd kafka.tools.StorageTool format -t "$cluster_id" -c "$datadir/server.properties") \
      > "$datadir/format.log" 2>&1 || die "storage format failed: $(cat "$datadir/format.log")"
  else
    # Restart: the controller port is part of the formatted quorum, keep it; take the new port.
    sed -i -e "s#^advertised.listeners=PLAINTEXT://127.0.0.1:[0-9]*#advertised.listeners=PLAINTEXT://127.0.0.1:$port#" \
      -e "s#^listeners=PLAINTEXT://127.0.0.1:[0-9]*,#listeners=PLAINTEXT://127.0.0.1:$port,#" "$datadir/server.properties"
  fi

  (java_cmd kafka.Kafka "$datadir/server.properties") > "$datadir/broker.log" 2>&1 &
  echo $! > "$datadir/broker.pid"
  cmd_wait "$datadir" "${BROKER_START_TIMEOUT_S:-90}"
}

cmd_stop() {
  local datadir="${1:?usage: broker.sh stop DATADIR}"
  pid_alive "$datadir" || { rm -f "$datadir/broker.pid"; echo "no broker running for $datadir"; return 0; }
  local pid
  pid="$(cat "$datadir/broker.pid")"
  kill -TERM "$pid"
  for _ in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$datadir/broker.pid"; echo "kafka broker stopped"; return 0; }
    sleep 0.2
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$datadir/broker.pid"
  echo "kafka broker killed after 60 s without a clean shutdown" >&2
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  wait) shift; cmd_wait "${1:?usage: broker.sh wait DATADIR [TIMEOUT_S]}" "${2:-90}" ;;
  stop) shift; cmd_stop "$@" ;;
  *) die "usage: broker.sh start PORT DATADIR [CONTROLLER_PORT] | wait DATADIR [TIMEOUT_S] | stop DATADIR" ;;
esac

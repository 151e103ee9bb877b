#!/usr/bin/env bash
# RabbitMQ for latchkey-tx's outbox tests: the machine's own broker on 127.0.0.1:5672 (guest/guest).
#   rabbitmq.sh start    start it when nothing answers on the port
#   rabbitmq.sh stop     stop it, but only when this script started it (other users share the broker)
#   rabbitmq.sh status   exit 0 when something answers on 127.0.0.1:${LATCHKEY_RABBITMQ_PORT:-5672}
# Installs Debian's rabbitmq-server when it is missing. Start output and the marker of a start made by this
# script live in <repo>/.data/rabbitmq/. Idempotent. With LATCHKEY_RABBITMQ_PORT other than 5672 it starts a
# separate node of its own on that port (data under .data/rabbitmq/), never touching the machine's broker.
# The tests close only connections they named themselves (rabbitmqctl close_connection), so they need
# rabbitmqctl on this host.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
DIR="$ROOT/.data/rabbitmq"
PORT="${LATCHKEY_RABBITMQ_PORT:-5672}"
TIMEOUT_S="${LATCHKEY_RABBITMQ_START_TIMEOUT_S:-120}"
# One marker per port: stopping a private node must never make "stop" on 5672 think it started the machine's broker.
MARKER="$DIR/started-by-script"
[ "$PORT" = 5672 ] || MARKER="$DIR/started-by-script-$PORT"

die() { echo "rabbitmq.sh: $*" >&2; exit 1; }

# An AMQP broker answers the protocol header with its own header or a connection.start frame.
answers() {
  timeout 3 bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT && printf 'AMQP\0\0\x09\x01' >&3 && head -c 1 <&3" \
    >/dev/null 2>&1
}

install_if_missing() {
  command -v rabbitmq-server >/dev/null && command -v rabbitmqctl >/dev/null && return 0
  command -v apt-get >/dev/null || die "rabbitmq-server is missing and apt-get is not available; install RabbitMQ 3.10+"
  echo "rabbitmq.sh: installing the Debian rabbitmq-server package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    rabbitmq-server >/dev/null || die "apt-get install rabbitmq-server failed"
}

# On another port than the default, a separate node of its own (name, distribution port, data under .data/),
# so it never collides with the machine's broker.
node_env() {
  [ "$PORT" = 5672 ] && return 0
  export RABBITMQ_NODE_PORT="$PORT" RABBITMQ_NODENAME="latchkey$PORT@localhost" RABBITMQ_DIST_PORT=$((PORT + 20000))
  export RABBITMQ_MNESIA_BASE="$DIR/mnesia" RABBITMQ_LOG_BASE="$DIR/log" RABBITMQ_CONFIG_FILE="$DIR/rabbitmq.conf"
}

ctl() { if [ "$PORT" = 5672 ]; then rabbitmqctl "$@"; else rabbitmqctl -n "latchkey$PORT@localhost" "$@"; fi; }

launch() {
  mkdir -p "$DIR"
  node_env
  if [ "$PORT" != 5672 ]; then
    mkdir -p "$RABBITMQ_MNESIA_BASE" "$RABBITMQ_LOG_BASE"
    # The machine's /etc/rabbitmq/rabbitmq.conf pins the listener to 5672: this node gets its own.
    echo "listeners.tcp.local = 127.0.0.1:$PORT" >"$RABBITMQ_CONFIG_FILE"
    chown -R rabbitmq:rabbitmq "$DIR" 2>/dev/null || true
  fi
  # The machine's own start command (see the environment notes); as root, Debian's wrapper runs it as rabbitmq.
  rabbitmq-server -detached >>"$DIR/start.log" 2>&1 \
    || die "rabbitmq-server -detached failed (see $DIR/start.log and /var/log/rabbitmq/)"
  date -u +%FT%TZ >"$MARKER"
}

wait_ready() {
  wait_for "RabbitMQ not answering on 127.0.0.1:$PORT" "$DIR/start.log" answers
}

case "${1:-}" in
  start)
    if ! answers; then
      install_if_missing
      launch
      wait_ready
    fi
    echo "RabbitMQ on 127.0.0.1:$PORT (LATCHKEY_RABBITMQ_URL=amqp://guest:guest@127.0.0.1:$PORT)"
    ;;
  stop)
    if [ -f "$MARKER" ]; then
      ctl -q stop
      rm -f "$MARKER"
      echo "RabbitMQ stopped"
    else
      echo "rabbitmq.sh: RabbitMQ was not started by this script; leaving it running"
    fi
    ;;
  status)
    if answers; then echo "RabbitMQ answering on 127.0.0.1:$PORT"; else echo "RabbitMQ not answering on 127.0.0.1:$PORT"; exit 1; fi
    ;;
  *) die "usage: $0 start|stop|status" ;;
esac

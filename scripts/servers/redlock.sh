#!/usr/bin/env bash
# Five independent Redis masters for latchkey's RedLock tests: 127.0.0.1 ports ${LATCHKEY_REDLOCK_PORTS:-6381..6385},
# no persistence (RedLock's default deployment; the tests that need AOF start their own servers on other ports).
#   redlock.sh start    start every node that does not answer yet (idempotent)
#   redlock.sh stop     stop the nodes this script started (SHUTDOWN NOSAVE)
#   redlock.sh status   exit 0 when all five answer PING
# Data, pid and log of node P live in <repo>/.data/redlock/P/. Installs Debian's redis-server when missing.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
PORTS="${LATCHKEY_REDLOCK_PORTS:-6381 6382 6383 6384 6385}"
TIMEOUT_S="${LATCHKEY_REDLOCK_START_TIMEOUT_S:-30}"

die() { echo "redlock.sh: $*" >&2; exit 1; }

answers() { [ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$1" --no-auth-warning ping 2>/dev/null)" = "PONG" ]; }

install_if_missing() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  command -v apt-get >/dev/null || die "redis-server is missing and apt-get is not available; install Redis 6.2+"
  echo "redlock.sh: installing the Debian redis-server package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    redis-server redis-tools >/dev/null || die "apt-get install redis-server failed"
}

launch() {
  local port="$1" dir="$ROOT/.data/redlock/$1"
  mkdir -p "$dir"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
    || die "redis-server could not start on port $port (see $dir/redis.log)"
  date -u +%FT%TZ >"$dir/started-by-script"
}

wait_ready() {
  wait_for "node 127.0.0.1:$1 not answering" "$ROOT/.data/redlock/$1/redis.log" answers "$1"
}

stop_node() {
  local port="$1" dir="$ROOT/.data/redlock/$1"
  if [ ! -f "$dir/started-by-script" ]; then
    answers "$port" && echo "redlock.sh: 127.0.0.1:$port was not started by this script; leaving it running"
    return 0
  fi
  if answers "$port"; then redis-cli -h 127.0.0.1 -p "$port" shutdown nosave >/dev/null 2>&1 || true; fi
  local deadline=$((SECONDS + TIMEOUT_S))
  while answers "$port"; do
    [ $SECONDS -lt $deadline ] || die "node 127.0.0.1:$port did not stop after ${TIMEOUT_S}s"
    sleep 0.2
  done
  rm -f "$dir/started-by-script"
  echo "redlock.sh: stopped 127.0.0.1:$port"
}

case "${1:-}" in
  start)
    install_if_missing
    for port in $PORTS; do
      if answers "$port"; then echo "redlock.sh: 127.0.0.1:$port already answers"; else launch "$port"; fi
    done
    for port in $PORTS; do wait_ready "$port"; done
    echo "redlock.sh: RedLock nodes ready on 127.0.0.1: $PORTS"
    ;;
  stop) for port in $PORTS; do stop_node "$port"; done ;;
  status)
    down=""
    for port in $PORTS; do answers "$port" || down="$down $port"; done
    if [ -n "$down" ]; then
      echo "redlock.sh: not answering on 127.0.0.1:$down" >&2
      exit 1
    fi
    echo "redlock.sh: all nodes answer on 127.0.0.1: $PORTS"
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac

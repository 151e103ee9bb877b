#!/usr/bin/env bash
# Redis for latchkey's tests: a server on 127.0.0.1:${LATCHKEY_REDIS_PORT:-6379} that keeps nothing on disk.
#   redis.sh start    start one when nothing answers on the port (the machine's own is usually running)
#   redis.sh stop     stop it, but only when this script started it (other users share the server)
#   redis.sh status   exit 0 when it answers PING
# Installs Debian's redis-server when it is missing. The pid, log and the marker of a start made by this
# script live in <repo>/.data/redis/<port>/. Idempotent. (Tests that stop Redis start their own private
# redis-server on a free port; this one is never stopped by a test.)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
PORT="${LATCHKEY_REDIS_PORT:-6379}"
DIR="$ROOT/.data/redis/$PORT"
TIMEOUT_S="${LATCHKEY_REDIS_START_TIMEOUT_S:-30}"

die() { echo "redis.sh: $*" >&2; exit 1; }

answers() { [ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$PORT" --no-auth-warning ping 2>/dev/null)" = "PONG" ]; }

install_if_missing() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  command -v apt-get >/dev/null || die "redis-server is missing and apt-get is not available; install Redis 6.2+"
  echo "redis.sh: installing the Debian redis-server package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    redis-server redis-tools >/dev/null || die "apt-get install redis-server failed"
}

launch() {
  mkdir -p "$DIR"
  # As the machine's own start command (see the environment notes), but with pid, log and dir of our own.
  redis-server --daemonize yes --bind 127.0.0.1 --port "$PORT" --save "" --appendonly no \
    --dir "$DIR" --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log" \
    || die "redis-server could not start (see $DIR/redis.log)"
  date -u +%FT%TZ >"$DIR/started-by-script"
}

wait_ready() {
  wait_for "Redis not answering on 127.0.0.1:$PORT" "$DIR/redis.log" answers
}

stop_server() {
  if [ ! -f "$DIR/started-by-script" ]; then
    echo "redis.sh: Redis on 127.0.0.1:$PORT was not started by this script; leaving it running"
    return 0
  fi
  if answers; then redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true; fi
  local deadline=$((SECONDS + TIMEOUT_S))
  while answers; do
    [ $SECONDS -lt $deadline ] || die "Redis on 127.0.0.1:$PORT did not stop after ${TIMEOUT_S}s"
    sleep 0.2
  done
  rm -f "$DIR/started-by-script"
  echo "redis.sh: stopped Redis on 127.0.0.1:$PORT"
}

case "${1:-}" in
  start)
    if answers; then
      echo "redis.sh: Redis already answers on 127.0.0.1:$PORT"
      exit 0
    fi
    install_if_missing
    launch
    wait_ready
    echo "redis.sh: Redis ready on 127.0.0.1:$PORT"
    ;;
  stop) stop_server ;;
  status)
    if answers; then
      echo "redis.sh: Redis answers on 127.0.0.1:$PORT"
    else
      echo "redis.sh: nothing answers on 127.0.0.1:$PORT" >&2
      exit 1
    fi
    ;;
  *)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac

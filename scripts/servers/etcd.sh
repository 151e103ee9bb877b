#!/usr/bin/env bash
# etcd for latchkey's tests: one member on loopback only.
#   etcd.sh start     member on 127.0.0.1:${LATCHKEY_ETCD_PORT:-2379} (client) / ${LATCHKEY_ETCD_PEER_PORT:-2380} (peer)
#   etcd.sh stop | status
#   etcd.sh install-etcdctl   installs Debian's etcd-client (etcdctl, Go's concurrency.Mutex behind `etcdctl lock`)
#                             when missing; the etcd-layout interop tests call it, and `start` does too
# Other ports give another, independent member (the fault tests run one on 23790/23800 that they stop and
# start themselves). Data and logs live in <repo>/.data/etcd/<client port>. Installs Debian's etcd-server when
# `etcd` is missing. Idempotent: a member that already answers is left alone.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
PORT="${LATCHKEY_ETCD_PORT:-2379}"
PEER_PORT="${LATCHKEY_ETCD_PEER_PORT:-2380}"
DIR="$ROOT/.data/etcd/$PORT"
TIMEOUT_S="${LATCHKEY_ETCD_START_TIMEOUT_S:-30}"
URL="http://127.0.0.1:$PORT"

die() { echo "etcd.sh: $*" >&2; exit 1; }

healthy() { curl -sf --max-time 1 "$URL/health" 2>/dev/null | grep -q '"health":"true"'; }

install_if_missing() {
  command -v etcd >/dev/null && return 0
  command -v apt-get >/dev/null || die "etcd is missing and apt-get is not available; install etcd 3.4+"
  echo "etcd.sh: installing the Debian etcd-server package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    etcd-server >/dev/null || die "apt-get install etcd-server failed"
  command -v etcd >/dev/null || die "etcd-server installed but no etcd binary on PATH"
}

# The interop tests run `etcdctl lock` (Go's concurrency.Mutex) against latchkey's `layout: 'etcd'`.
install_etcdctl_if_missing() {
  command -v etcdctl >/dev/null && return 0
  command -v apt-get >/dev/null || die "etcdctl is missing and apt-get is not available; install etcdctl 3.4+"
  echo "etcd.sh: installing the Debian etcd-client package (etcdctl)" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    etcd-client >/dev/null || die "apt-get install etcd-client failed"
  command -v etcdctl >/dev/null || die "etcd-client installed but no etcdctl binary on PATH"
}

launch() {
  local pidfile="$DIR/pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 0; fi
  mkdir -p "$DIR"
  # With an existing data dir etcd ignores the --initial-* flags and restarts the same member.
  # A 500 ms election timeout lowers etcd's minimum lease TTL (1.5 x election timeout) from 2 s to 1 s, so the
  # tests' sub-second leases expire on the server after about 1 s (etcd checks expiry every 500 ms).
  nohup etcd --name "latchkey-$PORT" --data-dir "$DIR/data" \
    --heartbeat-interval 50 --election-timeout 500 \
    --listen-client-urls "$URL" --advertise-client-urls "$URL" \
    --listen-peer-urls "http://127.0.0.1:$PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$PEER_PORT" \
    --initial-cluster "latchkey-$PORT=http://127.0.0.1:$PEER_PORT" --initial-cluster-state new \
    --logger zap --log-outputs stderr >>"$DIR/etcd.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

wait_healthy() {
  local deadline=$((SECONDS + TIMEOUT_S)) pid
  pid="$(cat "$DIR/pid")"
  until healthy; do
    kill -0 "$pid" 2>/dev/null || die "etcd exited during start (see $DIR/etcd.log)"
    [ $SECONDS -lt $deadline ] || die "etcd on $URL not healthy after ${TIMEOUT_S}s (see $DIR/etcd.log)"
    sleep 0.2
  done
}

stop_member() {
  local pidfile="$DIR/pid" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
}

case "${1:-}" in
  start)
    install_etcdctl_if_missing
    if healthy; then echo "etcd already serving on $URL"; exit 0; fi
    install_if_missing
    launch
    wait_healthy
    echo "etcd on $URL (LATCHKEY_ETCD_URL=$URL)"
    ;;
  install-etcdctl) install_etcdctl_if_missing ;;
  stop) stop_member ;;
  status)
    if healthy; then echo "etcd healthy on $URL"; else echo "etcd not serving on $URL"; exit 1; fi
    ;;
  *) die "usage: $0 start|stop|status|install-etcdctl (ports from LATCHKEY_ETCD_PORT / LATCHKEY_ETCD_PEER_PORT)" ;;
esac

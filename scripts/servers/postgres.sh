#!/usr/bin/env bash
# PostgreSQL for latchkey's tests: the machine's own cluster on 127.0.0.1:5432, database `test`.
#   postgres.sh start    start the cluster when it does not answer, then make sure database `test` exists
#   postgres.sh stop     stop it, but only when this script started it (other users share the server)
#   postgres.sh status   exit 0 when it answers on 127.0.0.1:${LATCHKEY_POSTGRES_PORT:-5432}
# Installs Debian's postgresql when it is missing. Start output and the marker of a start made by this
# script live in <repo>/.data/postgres/. Idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DIR="$ROOT/.data/postgres"
PORT="${LATCHKEY_POSTGRES_PORT:-5432}"
DB="${LATCHKEY_POSTGRES_DATABASE:-test}"
TIMEOUT_S="${LATCHKEY_POSTGRES_START_TIMEOUT_S:-60}"

die() { echo "postgres.sh: $*" >&2; exit 1; }

answers() { pg_isready -q -h 127.0.0.1 -p "$PORT" -t 2 >/dev/null 2>&1; }

install_if_missing() {
  command -v pg_ctlcluster >/dev/null && [ -n "$(ls /etc/postgresql 2>/dev/null)" ] && return 0
  command -v apt-get >/dev/null || die "PostgreSQL is missing and apt-get is not available; install PostgreSQL 15+"
  echo "postgres.sh: installing the Debian postgresql package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    postgresql >/dev/null || die "apt-get install postgresql failed"
}

launch() {
  mkdir -p "$DIR"
  local version
  version="$(ls /etc/postgresql | sort -V | tail -n 1)"
  # The machine's own start command (see the environment notes), so the cluster keeps its usual config.
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >>"$DIR/start.log" 2>&1 \
    || die "pg_ctlcluster $version main start failed (see $DIR/start.log and /var/log/postgresql/)"
  date -u +%FT%TZ >"$DIR/started-by-script"
}

wait_ready() {
  local deadline=$((SECONDS + TIMEOUT_S))
  until answers; do
    [ $SECONDS -lt $deadline ] || die "PostgreSQL not answering on 127.0.0.1:$PORT after ${TIMEOUT_S}s (see $DIR/start.log)"
    sleep 0.3
  done
}

psql_as_postgres() {
  psql -X -q -h 127.0.0.1 -p "$PORT" -U postgres -d postgres -v ON_ERROR_STOP=1 "$@" 2>/dev/null \
    || runuser -u postgres -- psql -X -q -p "$PORT" -d postgres -v ON_ERROR_STOP=1 "$@"
}

ensure_database() {
  local exists
  exists="$(psql_as_postgres -tA -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" \
    || die "could not query PostgreSQL as user postgres"
  [ "$exists" = "1" ] || psql_as_postgres -c "CREATE DATABASE \"$DB\"" || die "could not create database $DB"
}

case "${1:-}" in
  start)
    if ! answers; then
      install_if_missing
      launch
      wait_ready
    fi
    ensure_database
    echo "PostgreSQL on 127.0.0.1:$PORT (LATCHKEY_POSTGRES_URL=postgres://postgres@127.0.0.1:$PORT/$DB)"
    ;;
  stop)
    if [ -f "$DIR/started-by-script" ]; then
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main stop
      rm -f "$DIR/started-by-script"
      echo "PostgreSQL stopped"
    else
      echo "postgres.sh: PostgreSQL was not started by this script; leaving it running"
    fi
    ;;
  status)
    if answers; then echo "PostgreSQL answering on 127.0.0.1:$PORT"; else echo "PostgreSQL not answering on 127.0.0.1:$PORT"; exit 1; fi
    ;;
  *) die "usage: $0 start|stop|status" ;;
esac

#!/usr/bin/env bash
# PostgreSQL for latchkey's tests: the machine's own cluster on 127.0.0.1:5432, database `test`.
#   postgres.sh start    start the cluster when it does not answer, then make sure database `test` exists
#   postgres.sh stop     stop it, but only when this script started it (other users share the server)
#   postgres.sh status   exit 0 when it answers on 127.0.0.1:${LATCHKEY_POSTGRES_PORT:-5432}
# Installs Debian's postgresql when it is missing. Start output and the marker of a start made by this
# script live in <repo>/.data/postgres/. Idempotent.
# latchkey-tx's XA tests need two-phase commit, which PostgreSQL disables by default
# (max_prepared_transactions = 0, a setting read only at server start): `start` sets it to max_connections with
# ALTER SYSTEM and restarts the server (fast mode: sessions of other users are cut for about a second), and
# says so. It does nothing when the setting is already above 0, so every later run leaves the server alone.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
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
  version="$(pg_version)"
  # The machine's own start command (see the environment notes), so the cluster keeps its usual config.
  pg_ctlcluster --skip-systemctl-redirect "$version" main start >>"$DIR/start.log" 2>&1 \
    || die "pg_ctlcluster $version main start failed (see $DIR/start.log and /var/log/postgresql/)"
  date -u +%FT%TZ >"$DIR/started-by-script"
}

wait_ready() {
  wait_for "PostgreSQL not answering on 127.0.0.1:$PORT" "$DIR/start.log" answers
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

pg_version() { ls /etc/postgresql | sort -V | tail -n 1; }

restart_server() {
  local data="$1" version
  version="$(pg_version 2>/dev/null || true)"
  # The machine's Debian cluster restarts with its own command (so it keeps its usual config); any other
  # server (another port, a cluster made by initdb) with pg_ctl on the data directory it reports.
  if [ -n "$version" ] && [ "$data" = "/var/lib/postgresql/$version/main" ] && command -v pg_ctlcluster >/dev/null; then
    pg_ctlcluster --skip-systemctl-redirect "$version" main restart -m fast >>"$DIR/start.log" 2>&1
    return
  fi
  local bin
  bin="$(psql_as_postgres -tA -c "SELECT setting FROM pg_config WHERE name = 'BINDIR'" 2>/dev/null || true)"
  runuser -u postgres -- "${bin:-/usr/lib/postgresql/$version/bin}/pg_ctl" restart -m fast -w -D "$data" \
    >>"$DIR/start.log" 2>&1
}

# Two-phase commit on (see the header). Serialised by a lock file, and the setting read again under it, so
# concurrent runs of this script restart the server at most once.
ensure_prepared_transactions() {
  mkdir -p "$DIR"
  exec 9>"$DIR/prepared-transactions.lock"
  flock -w 120 9 || die "another postgres.sh holds $DIR/prepared-transactions.lock"
  local current wanted data
  current="$(psql_as_postgres -tA -c 'SHOW max_prepared_transactions')" || die "could not read max_prepared_transactions"
  if [ "$current" -gt 0 ]; then exec 9>&-; return 0; fi
  wanted="$(psql_as_postgres -tA -c 'SHOW max_connections')"
  data="$(psql_as_postgres -tA -c 'SHOW data_directory')"
  echo "postgres.sh: max_prepared_transactions is 0 (two-phase commit off); setting it to $wanted and restarting PostgreSQL on 127.0.0.1:$PORT (open sessions are cut for about a second)"
  psql_as_postgres -c "ALTER SYSTEM SET max_prepared_transactions = $wanted" \
    || die "ALTER SYSTEM SET max_prepared_transactions failed"
  restart_server "$data" 9>&- || die "restart of PostgreSQL failed (see $DIR/start.log); max_prepared_transactions stays 0 until the next start"
  wait_ready
  current="$(psql_as_postgres -tA -c 'SHOW max_prepared_transactions')"
  [ "$current" -gt 0 ] || die "max_prepared_transactions is still $current after the restart"
  echo "postgres.sh: max_prepared_transactions = $current"
  exec 9>&-
}

case "${1:-}" in
  start)
    if ! answers; then
      install_if_missing
      launch
      wait_ready
    fi
    ensure_database
    ensure_prepared_transactions
    echo "PostgreSQL on 127.0.0.1:$PORT (LATCHKEY_POSTGRES_URL=postgres://postgres@127.0.0.1:$PORT/$DB)"
    ;;
  stop)
    if [ -f "$DIR/started-by-script" ]; then
      pg_ctlcluster --skip-systemctl-redirect "$(pg_version)" main stop
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

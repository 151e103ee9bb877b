#!/usr/bin/env bash
# MariaDB for latchkey's MySQL tests: the machine's own server on 127.0.0.1:3306, database `test`.
#   mariadb.sh start    start it when it does not answer, then make sure database `test` exists
#   mariadb.sh stop     stop it, but only when this script started it (other users share the server)
#   mariadb.sh status   exit 0 when it answers on 127.0.0.1:${LATCHKEY_MYSQL_PORT:-3306}
# Installs Debian's mariadb-server when mariadbd is missing. Start output and the marker of a start made by
# this script live in <repo>/.data/mariadb/. Idempotent.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
DIR="$ROOT/.data/mariadb"
PORT="${LATCHKEY_MYSQL_PORT:-3306}"
DB="${LATCHKEY_MYSQL_DATABASE:-test}"
TIMEOUT_S="${LATCHKEY_MYSQL_START_TIMEOUT_S:-60}"

die() { echo "mariadb.sh: $*" >&2; exit 1; }

answers() { mariadb-admin --connect-timeout=2 -h 127.0.0.1 -P "$PORT" -uroot ping >/dev/null 2>&1; }

install_if_missing() {
  [ -x /usr/sbin/mariadbd ] && command -v mariadb >/dev/null && return 0
  command -v apt-get >/dev/null || die "mariadbd is missing and apt-get is not available; install MariaDB 10.11+"
  echo "mariadb.sh: installing the Debian mariadb-server package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    mariadb-server mariadb-client >/dev/null || die "apt-get install mariadb-server failed"
}

launch() {
  mkdir -p "$DIR" /run/mysqld
  chown mysql:mysql /run/mysqld 2>/dev/null || true
  if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >>"$DIR/start.log" 2>&1 \
      || die "mariadb-install-db failed (see $DIR/start.log)"
  fi
  # The machine's own start command (see the environment notes), so the server keeps its usual config.
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd >>"$DIR/start.log" 2>&1 \
    || die "start-stop-daemon could not start mariadbd (see $DIR/start.log)"
  date -u +%FT%TZ >"$DIR/started-by-script"
}

wait_ready() {
  wait_for "MariaDB not answering on 127.0.0.1:$PORT" "$DIR/start.log and the server's error log" answers
}

ensure_database() {
  # Over the local socket first (root may be socket-authenticated), then over TCP.
  mariadb -uroot -e "CREATE DATABASE IF NOT EXISTS \`$DB\`" 2>/dev/null \
    || mariadb -h 127.0.0.1 -P "$PORT" -uroot -e "CREATE DATABASE IF NOT EXISTS \`$DB\`" \
    || die "could not create database $DB (is root@127.0.0.1 allowed without a password?)"
}

case "${1:-}" in
  start)
    if ! answers; then
      install_if_missing
      launch
      wait_ready
    fi
    ensure_database
    echo "MariaDB on 127.0.0.1:$PORT (LATCHKEY_MYSQL_URL=mysql://root@127.0.0.1:$PORT/$DB)"
    ;;
  stop)
    if [ -f "$DIR/started-by-script" ]; then
      mariadb-admin -uroot shutdown 2>/dev/null || mariadb-admin -h 127.0.0.1 -P "$PORT" -uroot shutdown
      rm -f "$DIR/started-by-script"
      echo "MariaDB stopped"
    else
      echo "mariadb.sh: MariaDB was not started by this script; leaving it running"
    fi
    ;;
  status)
    if answers; then echo "MariaDB answering on 127.0.0.1:$PORT"; else echo "MariaDB not answering on 127.0.0.1:$PORT"; exit 1; fi
    ;;
  *) die "usage: $0 start|stop|status" ;;
esac

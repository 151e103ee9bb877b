#!/usr/bin/env bash
# ZooKeeper for latchkey's tests, on loopback only.
#   zookeeper.sh start              standalone server on 127.0.0.1:${LATCHKEY_ZK_PORT:-2181}
#   zookeeper.sh start-ensemble     three members on 127.0.0.1:${LATCHKEY_ZK_ENSEMBLE_PORTS:-2291,2292,2293}
#   zookeeper.sh stop (standalone and ensemble) | stop-ensemble | status | status-ensemble
#   zookeeper.sh kill-member N | start-member N   (ensemble failover tests)
# Runs QuorumPeerMain directly: Debian's zkServer.sh hard-codes /var/log and drops the slf4j binding.
# Data and logs live in <repo>/.data/zookeeper. Idempotent: a server that already answers is left alone, except
# that start-ensemble refuses members on its ports that another copy of the repo started (see check_member).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
. "$ROOT/scripts/lib/wait-for.sh"
DATA="$ROOT/.data/zookeeper"
PORT="${LATCHKEY_ZK_PORT:-2181}"
IFS=',' read -r -a EPORTS <<<"${LATCHKEY_ZK_ENSEMBLE_PORTS:-2291,2292,2293}"
# Quorum (peer) and election ports of member i: QBASE+i and EBASE+i (2880+i and 3880+i unless set, so that a
# private ensemble can run beside the shared one).
QBASE="${LATCHKEY_ZK_QUORUM_PORT_BASE:-2880}"
EBASE="${LATCHKEY_ZK_ELECTION_PORT_BASE:-3880}"
CLASSPATH_ZK="/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar"
TIMEOUT_S="${LATCHKEY_ZK_START_TIMEOUT_S:-60}"

die() { echo "zookeeper.sh: $*" >&2; exit 1; }

# Sends a four-letter command; prints the answer (empty when nothing listens or nothing answers within 3 s). The bound
# matters: a listener that accepts and never answers (a stopped or frozen JVM) left an unbounded `cat` waiting
# forever, and a CI run with it.
four() {
  timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf "%s" "$2" >&3 && cat <&3' _ "$1" "$2" 2>/dev/null || true
}
serving() { four "$1" srvr | grep -qE 'Mode: (standalone|leader|follower)'; }
# Whether anything accepts TCP connections on 127.0.0.1:PORT.
accepts() { timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null; }
port_free() { ! accepts "$1"; }

install_if_missing() {
  [ -f /usr/share/java/zookeeper.jar ] && [ -f /usr/share/java/slf4j-simple.jar ] && return 0
  command -v apt-get >/dev/null || die "zookeeper.jar missing and apt-get not available; install ZooKeeper 3.5+"
  echo "zookeeper.sh: installing the Debian zookeeper package" >&2
  apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends \
    zookeeper libslf4j-java >/dev/null || die "apt-get install zookeeper failed"
  command -v java >/dev/null || die "java is missing (install openjdk-17-jre-headless)"
}

# write_config DIR CLIENT_PORT [SERVER_LINES]
write_config() {
  mkdir -p "$1/data"
  cat >"$1/zoo.cfg" <<EOF
tickTime=1000
initLimit=10
syncLimit=5
dataDir=$1/data
clientPort=$2
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr,cons
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
${3:-}
EOF
}

# launch DIR: starts the JVM detached, records its pid.
launch() {
  local pidfile="$1/pid"
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then return 0; fi
  nohup java -Xmx256m -Dzookeeper.4lw.commands.whitelist='*' -cp "$CLASSPATH_ZK" \
    org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" >"$1/zk.log" 2>&1 </dev/null &
  echo $! >"$pidfile"
}

wait_serving() {
  local port
  for port in "$@"; do
    wait_for "ZooKeeper on 127.0.0.1:$port not serving" "$DATA" serving "$port"
  done
}

stop_dir() {
  local pidfile="$1/pid" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
  fi
  rm -f "$pidfile"
}

member_dir() { echo "$DATA/ensemble/zk$1"; }

# The pid listening on 127.0.0.1:PORT, if ss can tell (empty when nothing listens or it is another user's).
listener_pid() { ss -Htlnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true; }

# The command line of process PID, its arguments joined by spaces and cut at 300 characters (for messages); empty,
# with nothing on stderr, once the process is gone (stderr is redirected before the read that fails).
command_of() { tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline" | cut -c1-300 || true; }

# The zoo.cfg a QuorumPeerMain process PID was started with (its last argument), empty for anything else.
config_of() {
  local args
  mapfile -d '' -t args <"/proc/$1/cmdline" 2>/dev/null || return 0
  [ "${#args[@]}" -gt 0 ] || return 0
  printf '%s\n' "${args[@]}" | grep -qx 'org.apache.zookeeper.server.quorum.QuorumPeerMain' || return 0
  printf '%s' "${args[-1]}"
}

# refuse_silent_holder PORT: for a PORT that accepts connections but gives no answer to srvr (a ZooKeeper answers even
# while it is starting, "not currently serving"). Launching beside it would only fail to bind, and the tests would
# then talk to a server that never answers. A ZooKeeper started from a copy of the repo that no longer exists (its
# zoo.cfg is gone) is stopped: nothing can manage it any more, and a server that does not answer serves nobody.
# Anything else is named (pid, state, command; T: stopped) and the script dies.
refuse_silent_holder() {
  accepts "$1" || return 0
  [ -n "$(four "$1" srvr)" ] && return 0
  local pid state cmd cfg
  pid="$(listener_pid "$1")"
  [ -n "$pid" ] || die "port $1 accepts connections but nothing answered srvr within 3 s, and ss does not show" \
    "which process holds it (another user's?): stop it, or use another port (LATCHKEY_ZK_PORT)"
  cfg="$(config_of "$pid")"
  if [ -n "$cfg" ] && [ ! -e "$cfg" ]; then
    echo "zookeeper.sh: stopping pid $pid, a silent ZooKeeper on port $1 started from $cfg, which no longer exists" >&2
    kill -9 "$pid" 2>/dev/null || true
    wait_for "port $1 still held by pid $pid after kill -9" "/proc/$pid/status" port_free "$1"
    return 0
  fi
  state="$(ps -o stat= -p "$pid" 2>/dev/null | tr -d ' ' || true)"
  cmd="$(command_of "$pid")"
  die "port $1 accepts connections but nothing answered srvr within 3 s: pid $pid (state ${state:-?}) holds it: $cmd" \
    $'\n'" A stopped or frozen server (state T): kill -9 $pid. Or use another port: LATCHKEY_ZK_PORT"
}

# check_member I: dies when a port of member I (client, quorum, election) is held by a process this checkout did
# not start for that member. A member another copy of the repo started would join this checkout's ensemble (its
# peers are on the same ports), and kill-member/start-member would then kill it and start ours beside its peers:
# left over from a deleted clone, whose data directory is gone, it broke the failover test. Never stopped here: it
# may be another run's.
check_member() {
  local i=$1 port pid cfg ours cmd
  ours="$(realpath -m "$(member_dir "$i")/zoo.cfg")"
  for port in "${EPORTS[$((i - 1))]}" $((QBASE + i)) $((EBASE + i)); do
    pid="$(listener_pid "$port")"
    if [ -z "$pid" ]; then
      # Nothing listens, or ss cannot show the owner: then only a client port that answers is a problem.
      [ "$port" = "${EPORTS[$((i - 1))]}" ] && serving "$port" || continue
      die "port $port (ensemble member $i) answers, but ss does not show which process holds it (another user's?):" \
        "stop it, or use other ports: LATCHKEY_ZK_ENSEMBLE_PORTS, LATCHKEY_ZK_QUORUM_PORT_BASE, LATCHKEY_ZK_ELECTION_PORT_BASE"
    fi
    cfg="$(config_of "$pid")"
    [ -n "$cfg" ] && [ "$(realpath -m "$cfg")" = "$ours" ] && [ -f "$ours" ] && continue
    cmd="$(command_of "$pid")"
    local nl=$'\n' ports="LATCHKEY_ZK_ENSEMBLE_PORTS, LATCHKEY_ZK_QUORUM_PORT_BASE, LATCHKEY_ZK_ELECTION_PORT_BASE"
    if [ -z "$cfg" ]; then
      die "port $port (ensemble member $i) is held by pid $pid, which is not a ZooKeeper server: $cmd${nl}" \
        " Stop it (kill $pid) or use other ports: $ports"
    elif [ ! -e "$cfg" ]; then
      die "port $port (ensemble member $i) is held by ZooKeeper pid $pid, started from $cfg, which no longer exists" \
        "(a deleted copy of the repo); it would join this ensemble as a foreign member.${nl}" \
        " Stop it: kill $pid   (then run start-ensemble again)"
    else
      die "port $port (ensemble member $i) is held by ZooKeeper pid $pid of another copy of the repo ($cfg, not $ours);" \
        "it would join this ensemble, and the failover tests would kill and restart its members.${nl}" \
        " If that copy's runs are over, stop it: bash ${cfg%/.data/zookeeper/*}/scripts/servers/zookeeper.sh stop-ensemble (or kill $pid)${nl}" \
        " Or run this copy's ensemble on other ports: $ports"
    fi
  done
}

configure_member() {
  local i=$1 dir servers=""
  dir="$(member_dir "$i")"
  for j in 1 2 3; do servers+="server.$j=127.0.0.1:$((QBASE + j)):$((EBASE + j))"$'\n'; done
  write_config "$dir" "${EPORTS[$((i - 1))]}" "$servers"
  echo "$i" >"$dir/data/myid"
}

case "${1:-}" in
  start)
    if serving "$PORT"; then echo "ZooKeeper already serving on 127.0.0.1:$PORT"; exit 0; fi
    refuse_silent_holder "$PORT"
    install_if_missing
    write_config "$DATA/standalone" "$PORT"
    launch "$DATA/standalone"
    wait_serving "$PORT"
    echo "ZooKeeper standalone on 127.0.0.1:$PORT (LATCHKEY_ZK_URL=127.0.0.1:$PORT)"
    ;;
  start-ensemble)
    install_if_missing
    for i in 1 2 3; do check_member "$i"; done
    for i in 1 2 3; do
      serving "${EPORTS[$((i - 1))]}" && continue
      configure_member "$i"
      launch "$(member_dir "$i")"
    done
    wait_serving "${EPORTS[@]}"
    echo "ZooKeeper ensemble on 127.0.0.1:${EPORTS[0]},127.0.0.1:${EPORTS[1]},127.0.0.1:${EPORTS[2]}"
    ;;
  kill-member)
    [[ "${2:-}" =~ ^[123]$ ]] || die "kill-member needs 1, 2 or 3"
    dir="$(member_dir "$2")"
    # The process listening on the member's client port (a pid file may be stale or from another checkout).
    pid="$(ss -Htlnp "sport = :${EPORTS[$(($2 - 1))]}" | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true)"
    [ -z "$pid" ] && [ -f "$dir/pid" ] && pid="$(cat "$dir/pid")"
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/pid"
    ;;
  start-member)
    [[ "${2:-}" =~ ^[123]$ ]] || die "start-member needs 1, 2 or 3"
    configure_member "$2"
    launch "$(member_dir "$2")"
    ;;
  stop)
    # Everything this script started: the standalone server and any ensemble members.
    stop_dir "$DATA/standalone"
    for i in 1 2 3; do stop_dir "$(member_dir "$i")"; done
    ;;
  stop-ensemble) for i in 1 2 3; do stop_dir "$(member_dir "$i")"; done ;;
  status)
    if serving "$PORT"; then four "$PORT" srvr | grep -E 'version|Mode'; else echo "not serving on $PORT"; exit 1; fi
    ;;
  status-ensemble)
    rc=0
    for p in "${EPORTS[@]}"; do
      if serving "$p"; then echo "$p: $(four "$p" srvr | grep Mode)"; else echo "$p: not serving"; rc=1; fi
    done
    exit $rc
    ;;
  *) die "usage: $0 start|stop|status|start-ensemble|stop-ensemble|status-ensemble|kill-member N|start-member N" ;;
esac

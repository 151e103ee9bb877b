#!/usr/bin/env bash
# Network namespaces for T9 (a partition inside the lock cluster). Every member of the lab's ZooKeeper ensemble
# and etcd cluster gets a namespace of its own, and so do the lab's runner and clients; each has one veth to a
# router namespace, which forwards between them. A partition is then a pair of `ip rule ... blackhole` rules in the
# router (a silent drop, both directions), which cuts members off from each other while clients still reach them.
#
#   bash lab/netns.sh up                 # creates the namespaces (needs root and iproute2)
#   bash lab/netns.sh run <command...>   # runs a command in the clients' namespace (e.g. npm run lab -- --only T9-)
#   bash lab/netns.sh down               # deletes them
#
# Names start with $LAB_NETNS_PREFIX (default lk-lab-); addresses are 10.78.<n>.0/24, private to the namespaces:
# n=1-3 the ZooKeeper members, 4-6 the etcd members, 10 the clients. Nothing is added to the host's namespace.
set -euo pipefail

P="${LAB_NETNS_PREFIX:-lk-lab-}"
NODES=(z1:1 z2:2 z3:3 e1:4 e2:5 e3:6 c:10)

up() {
  command -v ip >/dev/null || { echo "netns.sh: iproute2 (ip) is missing" >&2; exit 1; }
  ip netns add "${P}r"
  ip -n "${P}r" link set lo up
  ip netns exec "${P}r" sysctl -qw net.ipv4.ip_forward=1
  for entry in "${NODES[@]}"; do
    local name="${entry%%:*}" n="${entry##*:}"
    ip netns add "${P}${name}"
    ip -n "${P}${name}" link set lo up
    # veth names are limited to 15 characters: the pair is named by the node number, inside private namespaces.
    ip link add "lkv${n}" netns "${P}${name}" type veth peer name "lkr${n}" netns "${P}r"
    ip -n "${P}${name}" addr add "10.78.${n}.2/24" dev "lkv${n}"
    ip -n "${P}r" addr add "10.78.${n}.1/24" dev "lkr${n}"
    ip -n "${P}${name}" link set "lkv${n}" up
    ip -n "${P}r" link set "lkr${n}" up
    ip -n "${P}${name}" route add default via "10.78.${n}.1"
  done
}

down() {
  for ns in $(ip netns list | awk '{print $1}' | grep "^${P}" || true); do ip netns del "$ns"; done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  run) shift; LAB_IN_NETNS="$P" exec ip netns exec "${P}c" "$@" ;;
  *) echo "usage: netns.sh up|down|run <command...>" >&2; exit 2 ;;
esac

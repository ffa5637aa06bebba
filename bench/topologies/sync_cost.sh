#!/usr/bin/env bash
# The cost of Options::sync_replicas (bench/topologies/sync_cost.cpp): starts a master
# and two replicas on free loopback ports, without persistence, and three
# sentinels watching the master, runs
# fairlock_sync_cost against them, and stops them on exit.
# Usage: bench/topologies/sync_cost.sh BUILD_DIR [blocks] [rounds]
set -euo pipefail
build=${1:?usage: bench/topologies/sync_cost.sh BUILD_DIR [blocks] [rounds]}
dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {  # port, extra args...
  local port=$1; shift
  mkdir -p "$dir/$port"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir/$port" --save '' --appendonly no "$@" \
    --logfile "$dir/$port/log" &
  pids+=($!)
}
master=$(free_port)
start "$master" --repl-diskless-sync yes --repl-diskless-sync-delay 0
for _ in 1 2; do start "$(free_port)" --replicaof 127.0.0.1 "$master"; done
for _ in $(seq 200); do
  [ "$(redis-cli -p "$master" info replication 2>/dev/null | grep -c 'state=online')" = 2 ] && break
  sleep 0.1
done
# Three sentinels watching the master: the same master through Sentinel.
sentinels=()
for _ in 1 2 3; do
  port=$(free_port)
  mkdir -p "$dir/$port"
  printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor bench 127.0.0.1 %s 2\n' "$port" "$dir/$port" "$master" \
    >"$dir/$port/sentinel.conf"
  redis-sentinel "$dir/$port/sentinel.conf" --logfile "$dir/$port/log" &
  pids+=($!)
  sentinels+=("127.0.0.1:$port")
done
for s in "${sentinels[@]}"; do
  for _ in $(seq 200); do
    redis-cli -p "${s#*:}" sentinel get-master-addr-by-name bench 2>/dev/null | grep -q "$master" && break
    sleep 0.1
  done
done
url="redis-sentinel://$(IFS=,; echo "${sentinels[*]}")#bench"
"$build/bench/fairlock_sync_cost" "$master" "${2:-15}" "${3:-3}" "$url"

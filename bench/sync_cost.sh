#!/usr/bin/env bash
# The cost of Options::sync_replicas (bench/sync_cost.cpp): starts a master
# and two replicas on free loopback ports, without persistence, runs
# fairlock_sync_cost against them, and stops them on exit.
# Usage: bench/sync_cost.sh BUILD_DIR [blocks] [rounds]
set -euo pipefail
build=${1:?usage: bench/sync_cost.sh BUILD_DIR [blocks] [rounds]}
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
"$build/bench/fairlock_sync_cost" "$master" "${@:2}"

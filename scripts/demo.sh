#!/usr/bin/env bash
# Builds fairlock, starts a throwaway redis-server on loopback, runs the demos
# (several processes taking turns on one fair lock; the promotion roulette),
# stops the server.
source "$(dirname "$0")/common.sh"
ensure_packages
build
start_redis
export FAIRLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
"$BUILD_DIR/examples/fairlock_demo" "$@"
echo
echo "The promotion roulette (examples/roulette.cpp):"
"$BUILD_DIR/examples/fairlock_roulette"

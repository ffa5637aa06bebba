#!/usr/bin/env bash
# Runs a command with FAIRLOCK_URL pointing at a throwaway redis-server.
source "$(dirname "$0")/../../scripts/common.sh"
start_redis
rc=0
FAIRLOCK_URL="redis://127.0.0.1:$REDIS_PORT" "$@" || rc=$?
exit $rc

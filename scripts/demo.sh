#!/usr/bin/env bash
# Builds what the demo shows (the library, the `fairlock` command and the
# examples; not the tests and benchmarks), starts a throwaway redis-server on
# loopback, runs the demos (several processes taking turns on one fair lock;
# the promotion roulette), stops the server. It configures the main build of
# scripts/test.sh (main_build_args), so that the tests after it compile only
# what the demo did not.
source "$(dirname "$0")/common.sh"
ensure_packages
use_ccache
main_build_args
echo "building the library, the command and the examples in $BUILD_DIR"
build "${FULL_BUILD_ARGS[@]}" -- fairlock_cli fairlock_examples
start_redis
export FAIRLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
"$BUILD_DIR/examples/fairlock_demo" "$@"
echo
echo "The promotion roulette (examples/roulette.cpp):"
"$BUILD_DIR/examples/fairlock_roulette"

#!/usr/bin/env bash
# Installs what is missing (as root), builds, runs the whole test suite.
# The tests start their own redis-server instances on free loopback ports.
source "$(dirname "$0")/common.sh"
ensure_packages
build -DFAIRLOCK_WARNINGS_AS_ERRORS=ON
cd "$BUILD_DIR"
ctest --output-on-failure --timeout 300 -j "${TEST_JOBS:-2}"

#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   bash scripts/test.sh          build (warnings as errors) + every test, then the
#                                 style, sanitizer, packaging and benchmark-smoke stages
#   bash scripts/test.sh --quick  build + the main test suite only
# Installs missing Debian packages when run as root (the whole run: all of
# them in one apt-get). Every test starts its own redis-server on a free
# loopback port. Every build compiles through ccache when it is installed
# (scripts/common.sh, use_ccache). The test stages run one after the other;
# the builds and the style check run beside them (scripts/stages.sh). At the
# end, also on failure or interruption, a table of each stage's wall time.
source "$(dirname "$0")/common.sh"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
[ "$quick" = 1 ] || PACKAGES+=("${CI_PACKAGES[@]}")
ensure_packages
use_ccache

# shellcheck source=scripts/stages.sh
source "$ROOT/scripts/stages.sh"

# g++ at C++17, everything, -Werror (main_build_args): also check_packaging.sh's
# g++/C++17 full build (PKG_REUSE_BUILD below), so that it is built once.
main_build() {
  main_build_args
  build "${FULL_BUILD_ARGS[@]}"
}
# TEST_JOBS tests at a time (default 6): most wait on timers, servers and
# failovers (the suite keeps 2 cores a quarter busy at 2 at a time); none may
# fail by timing on a loaded machine.
main_tests() {
  (cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j "${TEST_JOBS:-6}")
}
main_suite() {
  main_build
  main_tests
}

if [ "$quick" = 1 ]; then
  stage "build and test" main_suite
  exit 0
fi
# The whole run: the CPU-bound builds and checks run beside (in the
# background, nice 19) the stages that run tests, which mostly wait on timers
# and servers. Each build is done before the stage that needs it; the tests
# never share the cores with another test stage.
stage "build" main_build
export PKG_REUSE_BUILD="$BUILD_DIR"
beside "asan+ubsan build" bash "$ROOT/scripts/sanitize.sh" build-asan
stage "test" main_tests
beside_done
beside "tsan build" bash "$ROOT/scripts/sanitize.sh" build-tsan
stage "asan+ubsan tests" bash "$ROOT/scripts/sanitize.sh" test-asan
beside_done
beside "clang build, style" bash -c 'PKG_BUILD_ONLY=1 bash "$0/check_packaging.sh"; built=$?
  bash "$0/check_style.sh" && exit $built' "$ROOT/scripts"
stage "tsan tests" bash "$ROOT/scripts/sanitize.sh" test-tsan
stage "valgrind" bash "$ROOT/scripts/sanitize.sh" valgrind
beside_done
# After the builds beside: it measures ratios, and a busy core would skew them.
stage "benchmark smoke" bash "$ROOT/bench/run.sh" --smoke --build-dir "$BUILD_DIR"
stage "check_packaging" bash "$ROOT/scripts/check_packaging.sh"
echo "all stages passed"

#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   bash scripts/test.sh          build (warnings as errors) + every test, then the
#                                 style, sanitizer, packaging and benchmark-smoke stages
#   bash scripts/test.sh --quick  build + the main test suite only
# Installs missing Debian packages when run as root. Every test starts its own
# redis-server on a free loopback port.
source "$(dirname "$0")/common.sh"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
ensure_packages

stage() {  # stage NAME COMMAND...: runs and times one stage; stops at the first failure
  local name=$1 t0=$SECONDS
  shift
  echo "=== $name"
  "$@"
  echo "=== $name: ok in $((SECONDS - t0)) s"
}

main_suite() {
  build -DFAIRLOCK_WARNINGS_AS_ERRORS=ON
  (cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j "${TEST_JOBS:-2}")
}

stage "build and test" main_suite
if [ "$quick" = 1 ]; then exit 0; fi
for extra in check_style sanitize check_packaging; do
  if [ -f "$ROOT/scripts/$extra.sh" ]; then stage "$extra" bash "$ROOT/scripts/$extra.sh"; fi
done
if [ -f "$ROOT/bench/run.sh" ]; then stage "benchmark smoke" bash "$ROOT/bench/run.sh" --smoke; fi
echo "all stages passed"

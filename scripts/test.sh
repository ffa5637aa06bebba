#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   bash scripts/test.sh          build (warnings as errors) + every test, then the
#                                 style, sanitizer, packaging and benchmark-smoke stages
#   bash scripts/test.sh --quick  build + the main test suite only
# Installs missing Debian packages when run as root (the whole run: all of
# them in one apt-get). Every test starts its own redis-server on a free
# loopback port. Every build compiles through ccache when it is installed
# (scripts/common.sh, use_ccache). The stages run one after the other, never
# side by side: tests with deadlines and server pauses run alone on the cores.
# At the end, also on failure or interruption, a table of each stage's wall time.
source "$(dirname "$0")/common.sh"
quick=0
[ "${1:-}" = "--quick" ] && quick=1
[ "$quick" = 1 ] || PACKAGES+=("${CI_PACKAGES[@]}")
ensure_packages
use_ccache

# cpu_now: CPU_NOW = user+sys seconds of this shell's finished children so far
# (the CPU a stage used, which the machine's other load inflates less than its
# wall time; servers that daemonize themselves are not counted). `times` runs
# in this shell: in a subshell it would count the subshell's children only.
TIMES_FILE="$(mktemp /tmp/fairlock-ci-times.XXXXXX)"
cpu_now() {
  times >"$TIMES_FILE"
  CPU_NOW=$(sed -n 2p "$TIMES_FILE" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%d\n", t }')
}
STAGE_TIMES=()
RUN_START=$SECONDS
current=""
stage_table() {  # the table of stage times; runs on exit, whatever the status
  local rc=$?
  cpu_now
  [ -n "$current" ] && STAGE_TIMES+=("$(printf '%-18s %5d s %6d s  FAILED' "$current" $((SECONDS - current_t0)) \
    $((CPU_NOW - current_c0)))")
  echo
  echo "=== stage times: wall, and CPU (user+sys) of the stage's processes"
  printf '%s\n' "${STAGE_TIMES[@]}"
  printf '%-18s %5d s %6d s  (%d min %02d s)%s\n' total $((SECONDS - RUN_START)) "$CPU_NOW" \
    $(((SECONDS - RUN_START) / 60)) $(((SECONDS - RUN_START) % 60)) "$([ $rc -ne 0 ] && echo "  exit status $rc")"
  if command -v ccache >/dev/null && [ -n "${CCACHE_DIR:-}" ]; then
    ccache --print-stats 2>/dev/null | awk -F'\t' '$1 ~ /^(direct_cache_hit|preprocessed_cache_hit|cache_miss)$/ {
      printf "%s=%s ", $1, $2 } END { print "(ccache)" }' || true
  fi
  rm -f "$TIMES_FILE"
}
trap stage_table EXIT

stage() {  # stage NAME COMMAND...: runs and times one stage; stops at the first failure
  current=$1
  current_t0=$SECONDS
  cpu_now
  current_c0=$CPU_NOW
  shift
  echo "=== $current"
  "$@"
  cpu_now
  STAGE_TIMES+=("$(printf '%-18s %5d s %6d s' "$current" $((SECONDS - current_t0)) $((CPU_NOW - current_c0)))")
  echo "=== $current: ok in $((SECONDS - current_t0)) s"
  current=""
}

# g++ at C++17, everything, -Werror (main_build_args): also check_packaging.sh's
# g++/C++17 full build (PKG_REUSE_BUILD below), so that it is built once.
main_suite() {
  main_build_args
  build "${FULL_BUILD_ARGS[@]}"
  (cd "$BUILD_DIR" && ctest --output-on-failure --timeout 600 -j "${TEST_JOBS:-2}")
}

stage "build and test" main_suite
if [ "$quick" = 1 ]; then exit 0; fi
export PKG_REUSE_BUILD="$BUILD_DIR"
for extra in check_style sanitize check_packaging; do
  if [ -f "$ROOT/scripts/$extra.sh" ]; then stage "$extra" bash "$ROOT/scripts/$extra.sh"; fi
done
# The benchmark's binaries are the main build's (built there with everything).
if [ -f "$ROOT/bench/run.sh" ]; then stage "benchmark smoke" bash "$ROOT/bench/run.sh" --smoke --build-dir "$BUILD_DIR"; fi
echo "all stages passed"

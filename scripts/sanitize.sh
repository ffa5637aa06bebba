#!/usr/bin/env bash
# Sanitizer and valgrind stage of CI (scripts/test.sh runs it after the main
# suite). Three parts, each timed:
#   asan      build with -fsanitize=address,undefined into build-asan and run
#             the WHOLE ctest suite there (every test, every child process);
#   tsan      build with -fsanitize=thread into build-tsan the programs of
#             the concurrency tests only, and run those: the randomized fault
#             campaign (every fault the fault suite injects, one after another,
#             against threads and processes), the soak, and the thread, async,
#             heartbeat and safety tests of the main suite (TSAN_TESTS);
#   valgrind  run every example under valgrind (memcheck, leaks) against a
#             throwaway redis-server.
# Exits non-zero if any test fails or any sanitizer/valgrind report appears
# (reports are written to per-part log directories and checked afterwards,
# so a report from a child process whose exit status nobody checks still
# fails the stage).
#
#   bash scripts/sanitize.sh [asan] [tsan] [valgrind]   (default: all three)
#
# asan and tsan are each a build and a test part, which can also be run on
# their own: build-asan, test-asan, build-tsan, test-tsan (scripts/test.sh
# builds in the background while other tests run, then tests).
#
# Environment: ASAN_BUILD_DIR, TSAN_BUILD_DIR (default build-asan, build-tsan);
# VALGRIND_BUILD_DIR (default: $BUILD_DIR if it has the examples, else
# build-valgrind); SANITIZE_JOBS (ctest -j, default 4: the tests mostly wait
# on timers and servers; see TEST_JOBS in scripts/test.sh);
# FAIRLOCK_SOAK_SECONDS for the soak test under sanitizers (default 20).
# The top-level CMakeLists.txt is not touched: the flags go in with
# CMAKE_CXX_FLAGS / CMAKE_EXE_LINKER_FLAGS.
#
# Cuts (CPU seconds, cold ccache, 2 cores; measured 2026-11-27):
# - both builds with -g1 (line tables: what the sanitizers' stack traces
#   print, file:line and function) instead of -g: -28% CPU per compile
#   (3 heavy files: 38.9 -> 28.1 s), smaller objects, faster links;
# - TSan builds only the programs of the tests it runs, and runs the fault
#   campaign instead of the fault suite as well (the campaign injects the
#   same seven faults -- worker SIGSTOP/SIGKILL, connection and subscriber
#   kills, server pause, kill+restart, script flush -- at random into
#   threads and processes, judged by the checker): the fault suite
#   (Faults/Tamper*/NoScript, ~120 s of test time under TSan) still runs in
#   the plain build and under ASan+UBSan.
source "$(dirname "$0")/common.sh"
set +e  # run every part, report every failure, fail at the end
ensure_packages
use_ccache
if ! command -v valgrind >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends valgrind >/dev/null
  else
    echo "missing package: valgrind (run as root, or: sudo apt-get install valgrind)" >&2
    exit 1
  fi
fi

parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(asan tsan valgrind)
ASAN_BUILD_DIR="${ASAN_BUILD_DIR:-$ROOT/build-asan}"
TSAN_BUILD_DIR="${TSAN_BUILD_DIR:-$ROOT/build-tsan}"
JOBS="${SANITIZE_JOBS:-4}"
export FAIRLOCK_SOAK_SECONDS="${FAIRLOCK_SOAK_SECONDS:-20}"
# The Sentinel kill test's failovers (the main suite runs the 20 the issue
# asks for; here the code under the sanitizers meets a few).
export FAIRLOCK_SENTINEL_FAILOVERS="${FAIRLOCK_SENTINEL_FAILOVERS:-4}"
LOG_ROOT="$(mktemp -d /tmp/fairlock-sanitize-XXXXXX)"
failed=()
timings=()

timed() {  # timed LABEL COMMAND...: runs, records "LABEL: N s" and failures
  local label=$1 t0=$SECONDS rc
  shift
  echo "--- $label"
  "$@"
  rc=$?
  timings+=("$(printf '%-28s %5d s%s' "$label" $((SECONDS - t0)) "$([ $rc -ne 0 ] && echo '  FAILED')")")
  [ $rc -ne 0 ] && failed+=("$label")
  return $rc
}

# configure_and_build DIR EXTRA_CXX_FLAGS LINK_FLAGS [TARGET...]: a Debug
# build (no NDEBUG: asserts on) whose -g is -g1, of TARGETs (default: all).
configure_and_build() {
  local dir=$1 cxx=$2 link=$3 targets=()
  shift 3
  [ $# -gt 0 ] && targets=(--target "$@")
  cmake -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DFAIRLOCK_BUILD_BENCH=OFF \
    "-DCMAKE_CXX_FLAGS=$cxx" "-DCMAKE_EXE_LINKER_FLAGS=$link" >/dev/null &&
    cmake --build "$dir" -j "$(nproc)" ${targets[@]+"${targets[@]}"} >"$dir.build.log" 2>&1 ||
    { tail -40 "$dir.build.log"; return 1; }
}

# no_reports DIR LABEL: fails (and prints them) if any report file exists,
# or if a report was printed to a test's output (UBSan combined with ASan
# writes to stderr) that ctest kept in its logs (copied into DIR).
REPORT_MARKERS='runtime error:|ERROR: AddressSanitizer|ERROR: LeakSanitizer|WARNING: ThreadSanitizer|ERROR: ThreadSanitizer|SUMMARY: UndefinedBehaviorSanitizer'
no_reports() {
  local dir=$1 label=$2 files found=0
  files=$(find "$dir" -type f -size +0 ! -name 'ctest-*.log' 2>/dev/null)
  for f in $files; do
    found=1
    echo "===== $f"
    head -60 "$f"
  done
  for f in "$dir"/ctest-*.log; do
    [ -f "$f" ] || continue
    if grep -Eq "$REPORT_MARKERS" "$f"; then
      found=1
      echo "===== reports in the test output ($f):"
      grep -E -B2 -A12 "$REPORT_MARKERS" "$f" | head -80
    fi
  done
  [ $found -eq 0 ] && { echo "$label: no reports"; return 0; }
  echo "$label: sanitizer/valgrind reports found (above)"
  return 1
}

# ctest_in DIR LOGDIR TAG ARGS...: runs ctest, keeps its full log for no_reports.
ctest_in() {
  local dir=$1 logs=$2 tag=$3 rc
  shift 3
  (cd "$dir" && ctest --output-on-failure "$@")
  rc=$?
  cp "$dir/Testing/Temporary/LastTest.log" "$logs/ctest-$tag.log" 2>/dev/null
  return $rc
}

build_asan() {
  timed "asan+ubsan build" configure_and_build "$ASAN_BUILD_DIR" \
    "-O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
    "-fsanitize=address,undefined"
}

test_asan() {
  local logs="$LOG_ROOT/asan"
  mkdir -p "$logs"
  # halt at the first error in any process; reports go to files (checked below)
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_leaks=1:detect_stack_use_after_return=1:strict_string_checks=1:check_initialization_order=1:log_path=$logs/asan"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$logs/ubsan"
  timed "asan+ubsan: whole suite" ctest_in "$ASAN_BUILD_DIR" "$logs" all --timeout 1200 -j "$JOBS"
  timed "asan+ubsan: reports" no_reports "$logs" "asan+ubsan"
  unset ASAN_OPTIONS UBSAN_OPTIONS
}

# What TSan runs: the fault campaign, the soak, and the main suite's thread,
# process, async, heartbeat and safety tests (test_lock.cpp, test_separate_processes.cpp,
# test_async.cpp, test_safety*.cpp, test_inspect.cpp), sync_replicas, and the
# Sentinel and Cluster tests whose threads meet a master change or a moved
# slot (the cluster router's refresh thread, a Wake per node); and the programs they
# need (fairlock_tests brings the helper, the command and the TLS example).
TSAN_TESTS='^(Campaign|Soak|Lock|Process|Transport|Heartbeat|HeartbeatChurn|LockDestruction|LostCallback|StaleWake|ServerStall|Position|Inspect|Async|AsyncHeartbeat|Modes/AsyncModes|Safety|SafetyAsync|SyncReplicas)\.|^Sentinel\.(SemaphoreNever|AsyncWait|AGrantLostInAFailover|HolderAndWaiter|AReleaseDuringAFailover)|^Errors\.(AReleaseThatFailedIsAskedAgain|ShutdownDoesNotWait)|^Cluster\.(WaitersAre|SemaphoreNever|AsyncWait|AGrantComes|AnAsyncWait|ANameFollows|AWaiterWaitsOut|HolderAndWaiter|TheHeartbeat)'
TSAN_TARGETS=(fairlock_tests fairlock_campaign_tests fairlock_soak_tests fairlock_sync_tests fairlock_sentinel_tests
  fairlock_cluster_tests)

build_tsan() {
  timed "tsan build" configure_and_build "$TSAN_BUILD_DIR" "-O1 -fsanitize=thread" "-fsanitize=thread" \
    "${TSAN_TARGETS[@]}"
}

test_tsan() {
  local logs="$LOG_ROOT/tsan"
  mkdir -p "$logs"
  export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:log_path=$logs/tsan"
  # One ctest run, so that the campaign (the longest) overlaps the rest.
  timed "tsan: concurrency tests" ctest_in "$TSAN_BUILD_DIR" "$logs" tsan --timeout 1800 -j "$JOBS" -R "$TSAN_TESTS"
  timed "tsan: reports" no_reports "$logs" "tsan"
  unset TSAN_OPTIONS
}

run_valgrind() {
  local logs="$LOG_ROOT/valgrind" dir="${VALGRIND_BUILD_DIR:-}"
  mkdir -p "$logs"
  if [ -z "$dir" ]; then
    if [ -x "$BUILD_DIR/examples/fairlock_basic" ]; then dir="$BUILD_DIR"; else dir="$ROOT/build-valgrind"; fi
  fi
  if [ ! -x "$dir/examples/fairlock_basic" ]; then
    timed "valgrind: build examples" bash -c "cmake -S '$ROOT' -B '$dir' -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DFAIRLOCK_BUILD_TESTS=OFF -DFAIRLOCK_BUILD_BENCH=OFF >/dev/null && cmake --build '$dir' -j $(nproc) >'$dir.build.log' 2>&1" ||
      return
  fi
  REDIS_TLS=1 start_redis
  export FAIRLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
  local ex rc=0
  for ex in "$dir"/examples/fairlock_*; do
    [ -x "$ex" ] || continue
    local name log args=()
    name=$(basename "$ex")
    [ "$name" = fairlock_tls ] && args=("rediss://127.0.0.1:$REDIS_TLS_PORT" "$REDIS_DIR/ca.crt")
    log="$logs/$name"
    # errors and definite/indirect leaks fail; the log is kept only if it
    # reports something (checked with no_reports)
    timed "valgrind: $name" \
      valgrind -q --error-exitcode=99 --leak-check=full --show-leak-kinds=definite,indirect \
      --errors-for-leak-kinds=definite,indirect --fair-sched=yes --log-file="$log.%p" "$ex" ${args[@]+"${args[@]}"} \
      >/dev/null || rc=1
  done
  stop_redis
  trap - EXIT
  unset FAIRLOCK_URL
  timed "valgrind: reports" no_reports "$logs" "valgrind"
  return $rc
}

for part in "${parts[@]}"; do
  case "$part" in
    asan) build_asan && test_asan ;;
    tsan) build_tsan && test_tsan ;;
    build-asan) build_asan ;;
    build-tsan) build_tsan ;;
    test-asan) test_asan ;;
    test-tsan) test_tsan ;;
    valgrind) run_valgrind ;;
    *) echo "unknown part: $part (asan, tsan, valgrind, build-asan, build-tsan, test-asan, test-tsan)" >&2; exit 2 ;;
  esac
done

echo
echo "=== sanitize.sh timings"
printf '%s\n' "${timings[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]} (logs in $LOG_ROOT)"
  exit 1
fi
rm -rf "$LOG_ROOT"
echo "sanitizers and valgrind: clean"

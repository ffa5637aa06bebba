# How scripts/test.sh runs its stages (sourced, not run): each stage timed
# (wall, and CPU of its processes), a table of them at the end, also on
# failure or interruption; and one job at a time "beside" the stages: a
# CPU-bound build or check at the lowest CPU priority (nice 19) in the
# background, while the foreground stages run tests that mostly wait on
# timers and servers (the main suite keeps 2 cores a quarter busy). The
# tests keep the CPU they ask for: the scheduler gives a nice-19 process
# about 1.5 % of a core another process wants.

# cpu_now: CPU_NOW = user+sys seconds of this shell's finished children so far
# (the CPU a stage used, which the machine's other load inflates less than its
# wall time; servers that daemonize themselves are not counted). `times` runs
# in this shell: in a subshell it would count the subshell's children only.
TIMES_FILE="$(mktemp /tmp/fairlock-ci-times.XXXXXX)"
cpu_now() {
  times >"$TIMES_FILE"
  CPU_NOW=$(children_cpu "$TIMES_FILE")
}
# children_cpu FILE: user+sys seconds of the children in `times` output FILE.
children_cpu() {
  sed -n 2p "$1" | awk '{ t = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%d\n", t }'
}
STAGE_TIMES=()
RUN_START=$SECONDS
current=""
stage_row() {  # stage_row NAME WALL CPU [NOTE]
  printf '%-26s %5d s %6d s%s' "$1" "$2" "$3" "${4:+  $4}"
}
stage_table() {  # the table of stage times; runs on exit, whatever the status
  local rc=$?
  beside_stop
  cpu_now
  [ -n "$current" ] && STAGE_TIMES+=("$(stage_row "$current" $((SECONDS - current_t0)) $((CPU_NOW - current_c0)) FAILED)")
  echo
  echo "=== stage times: wall, and CPU (user+sys) of the stage's processes; (beside): run in the background"
  printf '%s\n' "${STAGE_TIMES[@]}"
  printf '%-26s %5d s %6d s  (%d min %02d s)%s\n' total $((SECONDS - RUN_START)) "$CPU_NOW" \
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
  STAGE_TIMES+=("$(stage_row "$current" $((SECONDS - current_t0)) $((CPU_NOW - current_c0)))")
  echo "=== $current: ok in $((SECONDS - current_t0)) s"
  current=""
}

# beside NAME COMMAND...: starts COMMAND at nice 19 in the background, in a
# session of its own (so that beside_stop can end all of it), its output in a
# log that beside_done prints. One at a time.
BESIDE_PID=""
beside() {
  BESIDE_NAME=$1
  shift
  BESIDE_DIR="$(mktemp -d /tmp/fairlock-ci-beside.XXXXXX)"
  BESIDE_T0=$(date +%s)
  echo "=== $BESIDE_NAME (beside, in the background)"
  mkfifo "$BESIDE_DIR/started"
  (
    trap - EXIT
    setsid nice -n 19 "$@" >"$BESIDE_DIR/log" 2>&1 &
    echo $! >"$BESIDE_DIR/started"
    rc=0
    wait $! || rc=$?
    times >"$BESIDE_DIR/times"
    date +%s >"$BESIDE_DIR/ended"
    exit $rc
  ) &
  BESIDE_PID=$!
  # its session's id (= its process group), once it runs: beside_stop needs it
  read -r BESIDE_SESSION <"$BESIDE_DIR/started"
}

# beside_done: waits for the job of beside, prints its output, records its
# wall time (from its start to its end, not to this wait) and CPU; fails if
# it failed.
beside_done() {
  local rc=0 name=$BESIDE_NAME
  [ -n "$BESIDE_PID" ] || return 0
  wait "$BESIDE_PID" || rc=$?
  BESIDE_PID=""
  echo "=== $name (beside): output"
  cat "$BESIDE_DIR/log"
  local wall=$(($(cat "$BESIDE_DIR/ended" 2>/dev/null || date +%s) - BESIDE_T0))
  STAGE_TIMES+=("$(stage_row "$name (beside)" "$wall" "$(children_cpu "$BESIDE_DIR/times" 2>/dev/null || echo 0)" \
    "$([ $rc -ne 0 ] && echo FAILED)")")
  rm -rf "$BESIDE_DIR"
  [ $rc -eq 0 ] || { echo "=== $name (beside): FAILED (exit status $rc)"; return $rc; }
  echo "=== $name (beside): ok in $wall s (its own run, from its start to its end)"
}

# beside_stop: ends the job of beside, if one runs (on exit: a failed stage
# leaves no build running behind the script).
beside_stop() {
  [ -n "$BESIDE_PID" ] || return 0
  kill -TERM -- "-$BESIDE_SESSION" 2>/dev/null || true  # (it may have ended already)
  wait "$BESIDE_PID" 2>/dev/null || true
  echo "=== $BESIDE_NAME (beside): stopped; the end of its output (all of it: $BESIDE_DIR/log)"
  tail -40 "$BESIDE_DIR/log"
  BESIDE_PID=""
}

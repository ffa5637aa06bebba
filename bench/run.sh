#!/usr/bin/env bash
# The fairlock benchmark, in one command:
#
#   bench/run.sh            full run (about 7 minutes): builds, starts its own
#                           redis-server, runs every scenario, prints the tables,
#                           writes bench/results/latest.json, latest.md and the
#                           chart bench/results/latest.svg (only latest.md and
#                           latest.svg are committed: the summary per scenario)
#   bench/run.sh --smoke    seconds-long version for CI; writes its results under
#                           the build directory, never over bench/results
#
# Options: --build-dir DIR   build there (default: build-bench/ at the repository root)
#          --only ABCDEFGHT  run only these scenarios (no chart; results under
#                            the build directory, never over bench/results;
#                            the letters: bench/README.md, bench/single_server/)
#          --no-build        use the binaries already in the build directory
#
# Exits non-zero only if the benchmark itself is broken (build failure, a
# scenario that could not run); missed performance targets are reported, not
# failed. Every step has a time limit; the redis-server and every worker
# process are stopped on exit.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MODE=full
BUILD_DIR="$ROOT/build-bench"
ONLY=""
BUILD=1
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) MODE=smoke ;;
    --build-dir) BUILD_DIR="$(mkdir -p "$2" && cd "$2" && pwd)"; shift ;;
    --only) ONLY="$2"; shift ;;
    --no-build) BUILD=0 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

say() { printf '%s\n' "$*" >&2; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

# ---------------------------------------------------------------- packages
# Required: what the library needs. Optional: Google Benchmark (the micro
# benchmarks), gnuplot (the chart) and valgrind (Redis's instructions per
# operation, bench/instructions.py). As root, the full run installs what is
# missing; the smoke run never installs anything and skips what is absent.
REQUIRED=(cmake g++ make pkg-config libhiredis-dev libssl-dev openssl libspdlog-dev redis-server)
OPTIONAL=(libbenchmark-dev gnuplot-nox valgrind)
if command -v dpkg-query >/dev/null; then
  missing=()
  for p in "${REQUIRED[@]}"; do have_pkg "$p" || missing+=("$p"); done
  if [ "$MODE" = full ]; then
    for p in "${OPTIONAL[@]}"; do
      if [ "$p" = gnuplot-nox ] && command -v gnuplot >/dev/null; then continue; fi
      have_pkg "$p" || missing+=("$p")
    done
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
      say "installing: ${missing[*]}"
      timeout 600 apt-get update -qq || true
      DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    else
      say "missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})"
      for p in "${REQUIRED[@]}"; do have_pkg "$p" || exit 1; done
    fi
  fi
fi

# ---------------------------------------------------------------- build
if [ "$BUILD" = 1 ]; then
  if [ -f "$BUILD_DIR/CMakeCache.txt" ]; then
    timeout 300 cmake -S "$ROOT" -B "$BUILD_DIR" -DFAIRLOCK_BUILD_BENCH=ON >/dev/null
  else
    timeout 300 cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFAIRLOCK_BUILD_BENCH=ON \
      -DFAIRLOCK_BUILD_TESTS=OFF -DFAIRLOCK_BUILD_EXAMPLES=OFF -DFAIRLOCK_BUILD_TOOLS=OFF -DFAIRLOCK_INSTALL=OFF \
      >/dev/null
  fi
  timeout 900 cmake --build "$BUILD_DIR" --target fairlock_bench -j "$(nproc)"
  if grep -q '^benchmark_DIR:PATH=/' "$BUILD_DIR/CMakeCache.txt"; then
    timeout 900 cmake --build "$BUILD_DIR" --target fairlock_microbench -j "$(nproc)"
  fi
fi
BIN="$BUILD_DIR/bench/fairlock_bench"
MICRO="$BUILD_DIR/bench/fairlock_microbench"
[ -x "$BIN" ] || { say "bench/run.sh: $BIN was not built"; exit 1; }

# Only a full run of every scenario replaces bench/results (README's tables).
if [ "$MODE" = smoke ]; then OUT="$BUILD_DIR/bench-smoke"
elif [ -n "$ONLY" ]; then OUT="$BUILD_DIR/bench-only"
else OUT="$ROOT/bench/results"; fi
mkdir -p "$OUT"

# ---------------------------------------------------------------- redis-server
TMP="$(mktemp -d /tmp/fairlock-bench.XXXXXX)"
REDIS_PID=""
cleanup() {
  if [ -n "$REDIS_PID" ]; then
    kill "$REDIS_PID" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$REDIS_PID" 2>/dev/null || true
    wait "$REDIS_PID" 2>/dev/null || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ping_redis() {
  if command -v redis-cli >/dev/null; then
    timeout 2 redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null | grep -q PONG
  else
    (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'PING\r\n' >&3 && timeout 2 head -c 7 <&3 | grep -q PONG) 2>/dev/null
  fi
}
# A TLS port too (scenario T), with a CA and certificate made here.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=bench CA" \
  -keyout "$TMP/ca.key" -out "$TMP/ca.crt" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=localhost" \
  -keyout "$TMP/server.key" -out "$TMP/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$TMP/san.ext"
openssl x509 -req -in "$TMP/server.csr" -CA "$TMP/ca.crt" -CAkey "$TMP/ca.key" -CAcreateserial -days 2 \
  -extfile "$TMP/san.ext" -out "$TMP/server.crt" 2>/dev/null
PORT=""
TLS_PORT=""
for attempt in 1 2 3 4 5; do
  PORT="$("$BIN" free-port)"
  TLS_PORT="$("$BIN" free-port)"
  redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
    --tls-port "$TLS_PORT" --tls-cert-file "$TMP/server.crt" --tls-key-file "$TMP/server.key" \
    --tls-ca-cert-file "$TMP/ca.crt" --tls-auth-clients no \
    --logfile "$TMP/redis.log" --daemonize no &
  REDIS_PID=$!
  for _ in $(seq 100); do
    ping_redis "$PORT" && break
    kill -0 "$REDIS_PID" 2>/dev/null || break
    sleep 0.05
  done
  ping_redis "$PORT" && break
  kill "$REDIS_PID" 2>/dev/null || true
  wait "$REDIS_PID" 2>/dev/null || true
  REDIS_PID=""
done
[ -n "$REDIS_PID" ] || { say "bench/run.sh: could not start redis-server"; exit 1; }
say "redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') on 127.0.0.1:$PORT (pid $REDIS_PID)"

broken=0
# ---------------------------------------------------------------- Google Benchmark
MICRO_ARGS=()
if [ -x "$MICRO" ] && [ -z "$ONLY" ]; then
  if [ "$MODE" = full ]; then min_time=0.5; else min_time=0.01; fi
  say "== Google Benchmark micro-benchmarks"
  if FAIRLOCK_BENCH_PORT="$PORT" timeout 300 "$MICRO" --benchmark_min_time="$min_time" \
      --benchmark_out="$TMP/micro.json" --benchmark_out_format=json; then
    MICRO_ARGS=(--micro "$TMP/micro.json")
  else
    say "bench/run.sh: fairlock_microbench failed"
    broken=1
  fi
elif [ -z "$ONLY" ]; then
  say "(fairlock_microbench not built: install libbenchmark-dev for the micro-benchmarks)"
fi

# ---------------------------------------------------------------- driver
RUN_ARGS=(run --port "$PORT" --tls-port "$TLS_PORT" --cacert "$TMP/ca.crt" --json "$OUT/latest.json" --md "$OUT/latest.md" --chart-data "$TMP")
[ "$MODE" = smoke ] && RUN_ARGS+=(--smoke)
[ -n "$ONLY" ] && RUN_ARGS+=(--only "$ONLY")
REV="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$ROOT" status --porcelain -- src lua include 2>/dev/null)" ]; then REV="$REV+local-changes"; fi
RUN_ARGS+=(--git-rev "$REV")
if [ "$MODE" = full ]; then limit=1200; else limit=150; fi
rc=0
timeout --kill-after=10 "$limit" "$BIN" "${RUN_ARGS[@]}" ${MICRO_ARGS[@]+"${MICRO_ARGS[@]}"} || rc=$?
if [ "$rc" -ne 0 ]; then
  say "bench/run.sh: the benchmark driver failed (exit $rc)"
  broken=1
fi

# ---------------------------------------------------------------- chart
if [ -z "$ONLY" ] && [ "$rc" -eq 0 ]; then
  if command -v gnuplot >/dev/null; then
    sub="$(cat "$TMP/subtitle.txt" 2>/dev/null || true)"
    if timeout 60 gnuplot -e "datadir='$TMP/'; outfile='$OUT/latest.svg'; subtitle='$sub'" "$ROOT/bench/harness/chart.gp"; then
      say "chart: $OUT/latest.svg"
    else
      say "bench/run.sh: gnuplot failed"
      broken=1
    fi
  else
    say "(gnuplot not installed: no chart; apt-get install gnuplot-nox)"
  fi
fi
# ---------------------------------------------------------------- instructions
# Redis's instructions per operation, counted by callgrind on a server of
# the tool's own: figures that do not move with the VM's speed.
if [ -z "$ONLY" ] && [ "$rc" -eq 0 ]; then
  if command -v valgrind >/dev/null && command -v python3 >/dev/null; then
    if [ "$MODE" = full ]; then cycles=1000; else cycles=50; fi
    say "== Redis instructions per operation (callgrind)"
    if timeout 300 python3 "$ROOT/bench/instructions.py" --cycles "$cycles" >"$TMP/instructions.txt"; then
      cat "$TMP/instructions.txt" >&2
      {
        printf '\n## Redis instructions per operation\n\n'
        printf 'Counted by callgrind on a redis-server of its own (bench/instructions.py, %s cycles each):\n\n' "$cycles"
        printf '```\n'
        cat "$TMP/instructions.txt"
        printf '```\n'
      } >>"$OUT/latest.md"
    else
      say "bench/run.sh: bench/instructions.py failed"
      broken=1
    fi
  else
    say "(valgrind not installed: no instruction counts; apt-get install valgrind)"
  fi
fi
say "results: $OUT/latest.json, $OUT/latest.md"
exit "$broken"

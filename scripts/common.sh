# Shared by scripts/test.sh and scripts/demo.sh (sourced, not run).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build}"
PACKAGES=(cmake g++ make pkg-config libhiredis-dev libssl-dev openssl libspdlog-dev libgtest-dev googletest redis-server redis-sentinel)
# What the other CI stages add (check_style, sanitize, check_packaging): the
# whole run installs them with the base packages, in one apt-get.
CI_PACKAGES=(ccache clang clang-format-14 clang-tidy-14 valgrind)

# Installs missing Debian packages when run as root; otherwise names them.
ensure_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "missing packages: ${missing[*]} (run as root, or: sudo apt-get install ${missing[*]})" >&2
    exit 1
  fi
}

# use_ccache: every build configured from here on compiles through ccache
# (CMake reads CMAKE_CXX_COMPILER_LAUNCHER from the environment when it first
# configures a build tree), with its cache in $CCACHE_DIR (default
# /tmp/fairlock-ccache-<uid>, outside the clone: a clean clone stays clean).
use_ccache() {
  command -v ccache >/dev/null || return 0
  export CMAKE_CXX_COMPILER_LAUNCHER="${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}"
  export CCACHE_DIR="${CCACHE_DIR:-/tmp/fairlock-ccache-$(id -u)}"
  export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$ROOT}"
}

# full_build_args CXX STD: the cmake arguments of a full build (library,
# command, examples, tests, benchmarks, install rules) by CXX in C++STD, with
# -Wall -Wextra -Wpedantic -Werror, into FULL_BUILD_ARGS. scripts/test.sh's
# main build is g++ at C++17 with these arguments, so check_packaging.sh takes
# it as its g++/C++17 full build instead of building everything again.
full_build_args() {
  FULL_BUILD_ARGS=(-DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DCMAKE_CXX_COMPILER="$(command -v "$1" || echo "$1")"
    -DCMAKE_CXX_STANDARD="$2" -DCMAKE_CXX_STANDARD_REQUIRED=ON -DCMAKE_CXX_EXTENSIONS=OFF
    -DFAIRLOCK_WARNINGS_AS_ERRORS=ON -DFAIRLOCK_BUILD_TESTS=ON -DFAIRLOCK_BUILD_EXAMPLES=ON
    -DFAIRLOCK_BUILD_TOOLS=ON -DFAIRLOCK_BUILD_BENCH=ON -DFAIRLOCK_INSTALL=ON)
}

# main_build_args: FULL_BUILD_ARGS of the main build (scripts/test.sh's, the
# demo's), g++ at C++17 with everything and -Werror, RelWithDebInfo with -g1
# (line tables: backtraces keep their functions and lines) instead of -g: g++
# emits the same code whatever the -g level, and warns the same; 25% less CPU
# per compile (3 heavy files, cold: 25.7 -> 19.5 s user). The demo configures
# the same build and builds only what it shows, so `bash scripts/test.sh`
# after it compiles nothing twice.
main_build_args() {
  full_build_args g++ 17
  if [ "${BUILD_TYPE:-RelWithDebInfo}" = RelWithDebInfo ]; then
    FULL_BUILD_ARGS+=("-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
  fi
}

# build [extra cmake args...] [-- TARGET...]: configures $BUILD_DIR and builds
# TARGETs (default: all).

build() {
  local args=() targets=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
  [ $# -gt 0 ] && shift && targets=(--target "$@")
  cmake -S "$ROOT" -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" ${args[@]+"${args[@]}"} >/dev/null
  cmake --build "$BUILD_DIR" -j "$(nproc)" ${targets[@]+"${targets[@]}"}
}

# Starts a throwaway redis-server on a free loopback port, daemonized, with
# its own directory; sets REDIS_PORT, REDIS_DIR and REDIS_PID, and stops it
# (stop_redis) on exit. The server that answers must be ours: another test
# may have taken the port between our choice and redis-server's bind, so we
# check that it reports our directory (and take its pid from it, rather than
# from the pidfile, which a daemonized server may write after its first
# reply). Fails after 5 attempts. With REDIS_TLS=1 the server also has a TLS
# port, REDIS_TLS_PORT, with a certificate for 127.0.0.1 signed by the CA
# $REDIS_DIR/ca.crt (made here with openssl).
start_redis() {
  local dir tls=()
  REDIS_DIR="$(cd "$(mktemp -d /tmp/fairlock-redis-sh.XXXXXX)" && pwd -P)"
  REDIS_PID=""
  trap stop_redis EXIT
  [ "${REDIS_TLS:-0}" = 1 ] && _make_certificates "$REDIS_DIR"
  for _ in 1 2 3 4 5; do
    REDIS_PORT="$(_free_port)"
    if [ "${REDIS_TLS:-0}" = 1 ]; then
      REDIS_TLS_PORT="$(_free_port)"
      tls=(--tls-port "$REDIS_TLS_PORT" --tls-cert-file "$REDIS_DIR/server.crt" --tls-key-file "$REDIS_DIR/server.key"
        --tls-ca-cert-file "$REDIS_DIR/ca.crt" --tls-auth-clients no)
    fi
    rm -f "$REDIS_DIR/redis.log"
    redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$REDIS_DIR" \
      ${tls[@]+"${tls[@]}"} \
      --daemonize yes --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" || continue
    for _ in $(seq 200); do  # up to 10 s
      dir="$(redis-cli -p "$REDIS_PORT" config get dir 2>/dev/null | sed -n 2p)" || dir=""
      if [ "$dir" = "$REDIS_DIR" ]; then
        REDIS_PID="$(redis-cli -p "$REDIS_PORT" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id:\([0-9][0-9]*\)$/\1/p')" || true
        [ -n "$REDIS_PID" ] && return 0
      fi
      # ours failed to start (e.g. the port was taken): try another port
      grep -q -e 'aborting' -e 'Address already in use' "$REDIS_DIR/redis.log" 2>/dev/null && break
      sleep 0.05
    done
    _redis_stop_pid "$(cat "$REDIS_DIR/redis.pid" 2>/dev/null || true)"
  done
  echo "start_redis: redis-server did not start (log: $REDIS_DIR/redis.log)" >&2
  cat "$REDIS_DIR/redis.log" >&2 2>/dev/null || true
  return 1
}

_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 20000))
}

# _make_certificates DIR: a CA (ca.crt) and a server certificate for
# 127.0.0.1 and localhost (server.crt, server.key) signed by it.
_make_certificates() {
  local d="$1" ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
  openssl req -x509 "${ec[@]}" -days 2 -subj "/CN=fairlock test CA" -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req "${ec[@]}" -subj "/CN=localhost" -keyout "$d/server.key" -out "$d/server.csr" 2>/dev/null
  printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' >"$d/san.ext"
  openssl x509 -req -in "$d/server.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 2 \
    -extfile "$d/san.ext" -out "$d/server.crt" 2>/dev/null
}

# _redis_alive PID: the process exists, is not a zombie, and is a redis-server
# (so a recycled pid is never signalled).
_redis_alive() {
  local state
  [ -n "$1" ] || return 1
  if [ -r "/proc/$1/stat" ]; then
    state="$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1
    [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] &&
      grep -q '^redis-server' "/proc/$1/comm" 2>/dev/null
  else
    kill -0 "$1" 2>/dev/null
  fi
}

# _redis_stop_pid PID: SIGTERM, then waits up to 10 s for the process to be
# gone (SIGKILL and 2 s more if it is not). Never fails.
_redis_stop_pid() {
  local pid="$1"
  _redis_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 200); do
    _redis_alive "$pid" || return 0
    sleep 0.05
  done
  echo "stop_redis: redis-server $pid still running 10 s after SIGTERM; SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for _ in $(seq 40); do
    _redis_alive "$pid" || return 0
    sleep 0.05
  done
  return 0
}

# Stops the server of start_redis, waits until its process is gone, and only
# then removes its directory (removing it while the server still shuts down,
# and writes its log, fails with "Directory not empty"). Idempotent, and never
# fails: it runs in EXIT traps, where a failure would replace the exit status.
stop_redis() {
  local dir="${REDIS_DIR:-}" pid="${REDIS_PID:-}"
  REDIS_DIR=""
  REDIS_PID=""
  [ -n "$dir" ] || return 0
  # no pid from start_redis (it failed half-way): the pidfile, if any
  [ -n "$pid" ] || pid="$(cat "$dir/redis.pid" 2>/dev/null || true)"
  _redis_stop_pid "$pid"
  for _ in 1 2 3 4 5; do
    rm -rf "$dir" 2>/dev/null && return 0
    sleep 0.2
  done
  echo "stop_redis: could not remove $dir" >&2
  return 0
}

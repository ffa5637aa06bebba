#!/usr/bin/env bash
# Packaging check (CI), for compilers (g++, clang++) and C++ standards (17, 20):
#   1. one full build per compiler -- library, command, examples, tests and
#      benchmarks -- with -DFAIRLOCK_WARNINGS_AS_ERRORS=ON (-Wall -Wextra
#      -Wpedantic -Werror on every target, checked in flags.make), the
#      standards taken in turn (g++ at C++17, clang++ at C++20), so that every
#      compiler and every standard builds everything at least once;
#   2. one `cmake --install` (from the first full build) into a temporary
#      prefix, checking what landed there and that the version agrees
#      everywhere (project(), version.h, `fairlock --version`, fairlock.pc,
#      fairlockConfigVersion.cmake);
#   3. for EVERY compiler x standard: each installed public header compiled
#      alone (self-contained, -Wall -Wextra -Wpedantic -Werror), and the three
#      consumer projects of tests/consumers/ built and run against a throwaway
#      redis-server: find_package and pkg-config against the one install tree
#      (so a clang++ consumer also links the g++-built package), and
#      add_subdirectory, which compiles the library's own sources in that
#      compiler and standard with -Werror.
# Before, every compiler x standard rebuilt and installed everything (4 full
# builds); the tests, benchmarks and examples do not need a build per
# standard for what this check proves.
# The first full build (g++ at C++17) is scripts/test.sh's main build when
# PKG_REUSE_BUILD names it: that build has the same arguments
# (full_build_args in scripts/common.sh), so configuring and building it here
# changes nothing and compiles nothing; building it again elsewhere compiled
# the same sources with the same compiler and flags a second time.
# The full builds after the first (clang++ at C++20) compile at -O0 without
# -g (NDEBUG kept, as in RelWithDebInfo): clang's warnings come from its front
# end, the same at every -O, so -Werror proves the same; everything is still
# compiled and linked. 3 heavy files: 25.2 s CPU at -O2 -g, 7.8 s at -O0.
# A test run proves that these binaries work, not the suite again (it ran in
# scripts/test.sh, g++ -O2): by default the server-free tests (label "unit")
# and a smoke of the library against a server (CTEST_SMOKE: the examples, the
# lock and async suites, the scripts), in the last full build (71 s for 363
# tests before).
# add_subdirectory builds the library in each compiler and standard with
# -Werror only where no full build did (g++ C++20, clang++ C++17): the full
# builds compiled it in theirs with the same flags (the consumer's own
# checks, of what it builds and installs, run in those two).
#
# Environment:
#   COMPILERS="g++ clang++"   STANDARDS="17 20"
#   RUN_TESTS=one|first|all|none  (default one: the last full build; first:
#                             the first one; all: every full build)
#   CTEST_ARGS                ctest arguments (default: label "unit", then -R "$CTEST_SMOKE";
#                             "-LE faults" for the suite without the fault suites, "" for every test)
#   FULL_BUILD_OPT            compiler flags of the full builds after the first
#                             (default "-O0 -DNDEBUG"; "" for RelWithDebInfo's)
#   PKG_BUILD_ROOT            build directories (default <repo>/build-pkg/<cxx>-c++<std>;
#                             kept, so a second run is incremental)
#   PKG_BUILD_ONLY=1          only the full builds (scripts/test.sh runs them in the
#                             background while tests run; the check after it finds them built)
#   PKG_REUSE_BUILD           the build directory of the first full build (scripts/test.sh
#                             passes its own: same arguments, nothing is rebuilt)
#   BUILD_TYPE                (default RelWithDebInfo)
#   EXTRA_CMAKE_ARGS          more arguments for configuring fairlock (e.g.
#                             "-DFAIRLOCK_BUILD_TESTS=OFF" with RUN_TESTS=none)
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

read -r -a COMPILERS <<<"${COMPILERS:-g++ clang++}"
read -r -a STANDARDS <<<"${STANDARDS:-17 20}"
RUN_TESTS="${RUN_TESTS:-one}"
case "$RUN_TESTS" in one | first | all | none) ;; *) echo "RUN_TESTS: one, first, all or none" >&2; exit 2 ;; esac
PKG_BUILD_ROOT="${PKG_BUILD_ROOT:-$ROOT/build-pkg}"
JOBS="$(nproc)"
for cxx in "${COMPILERS[@]}"; do
  case "$cxx" in clang++*) PACKAGES+=(clang) ;; esac
done
ensure_packages
use_ccache

VERSION="$(sed -n 's/^project(fairlock VERSION \([0-9][0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")"
[ -n "$VERSION" ] || { echo "no project(fairlock VERSION x.y.z) in CMakeLists.txt" >&2; exit 1; }

WORK="$(mktemp -d /tmp/fairlock-pkg.XXXXXX)"
if [ "${PKG_BUILD_ONLY:-0}" = 1 ]; then
  trap 'rm -rf "$WORK"' EXIT
else
  start_redis
  trap 'stop_redis; rm -rf "$WORK"' EXIT
  export FAIRLOCK_URL="redis://127.0.0.1:$REDIS_PORT"
fi

step() { printf '\n=== %s\n' "$*"; }
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
# quiet LOG CMD...: runs CMD with its output in LOG, shown only if CMD fails.
quiet() {
  local log="$1"
  shift
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    fail "$*"
  fi
}
seconds() { echo $(($(date +%s) - $1)); }

check_prefix() {
  local prefix="$1" f
  for f in include/fairlock/fairlock.h include/fairlock/version.h include/fairlock/client.h \
    lib/libfairlock.a bin/fairlock share/fairlock/lua/lib.lua share/fairlock/lua/upgrade.lua share/fairlock/lua/acquire.lua \
    lib/cmake/fairlock/fairlockConfig.cmake lib/cmake/fairlock/fairlockConfigVersion.cmake \
    lib/cmake/fairlock/fairlockTargets.cmake lib/cmake/fairlock/Findhiredis.cmake lib/pkgconfig/fairlock.pc; do
    [ -e "$prefix/$f" ] || fail "not installed: $f"
  done
  [ ! -e "$prefix/include/fairlock/version.h.in" ] || fail "version.h.in installed"
  # The package init block once (a placeholder in a comment of the .in file expanded it twice).
  [ "$(grep -c 'get_filename_component(PACKAGE_PREFIX_DIR' "$prefix/lib/cmake/fairlock/fairlockConfig.cmake")" = 1 ] ||
    fail "fairlockConfig.cmake: the @PACKAGE_INIT@ block is not there exactly once"
  grep -q "FAIRLOCK_VERSION_STRING \"$VERSION\"" "$prefix/include/fairlock/version.h" ||
    fail "installed version.h does not say $VERSION"
  [ "$("$prefix/bin/fairlock" --version)" = "fairlock $VERSION" ] || fail "fairlock --version: $("$prefix/bin/fairlock" --version)"
  [ "$(PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --modversion fairlock)" = "$VERSION" ] ||
    fail "fairlock.pc version"
  PKG_CONFIG_PATH="$prefix/lib/pkgconfig" pkg-config --static --libs fairlock | grep -q -- '-lhiredis.*-lspdlog.*-lfmt' ||
    fail "pkg-config --static --libs fairlock lacks hiredis/spdlog/fmt"
}

# What the test run adds to the unit tests (label "unit"), by default.
CTEST_SMOKE='^(example_|Lock\.|Async\.|Scripts\.|readme_examples_compile$)'
# ctest_in BDIR LOG ARGS...: one ctest run; on failure, its log is kept in BDIR.
ctest_in() {
  local bdir="$1" log="$2"
  shift 2
  if ! (cd "$bdir" && ctest --output-on-failure --timeout 300 -j "$JOBS" "$@") >"$log" 2>&1; then
    sed -n '/tests passed/,$p; /\*\*\*Failed\|\*\*\*Timeout\|Exception/p' "$log" >&2
    cp "$log" "$bdir/ctest-packaging.log"
    fail "$(basename "$bdir"): ctest $* (full log: $bdir/ctest-packaging.log)"
  fi
  grep 'tests passed' "$log"
}
# run_tests BDIR LOGS: CTEST_ARGS if set, else the unit tests and the smoke.
run_tests() {
  local bdir="$1" logs="$2" t
  t=$(date +%s)
  if [ -n "${CTEST_ARGS+set}" ]; then
    # shellcheck disable=SC2086  # CTEST_ARGS is a list
    ctest_in "$bdir" "$logs/ctest.log" $CTEST_ARGS
  else
    ctest_in "$bdir" "$logs/ctest-unit.log" -L unit
    ctest_in "$bdir" "$logs/ctest-smoke.log" -R "$CTEST_SMOKE"
  fi
  echo "tests ran in $(seconds "$t") s"
}

WARN_FLAGS=(-Wall -Wextra -Wpedantic -Werror)
total_start=$(date +%s)
declare -A FULL_BUILT  # the compiler-standard pairs that had a full build

# --- 1. one full build per compiler, the standards in turn
first_bdir=""
ncxx=${#COMPILERS[@]}
for i in "${!COMPILERS[@]}"; do
  cxx="${COMPILERS[$i]}"
  std="${STANDARDS[$((i % ${#STANDARDS[@]}))]}"
  name="$(basename "$cxx")-c++$std"
  bdir="$PKG_BUILD_ROOT/$name"
  if [ "$i" -eq 0 ] && [ -n "${PKG_REUSE_BUILD:-}" ]; then
    bdir="$PKG_REUSE_BUILD"
    # built already, and maybe in use (scripts/test.sh runs its examples meanwhile)
    [ "${PKG_BUILD_ONLY:-0}" = 1 ] && continue
  fi
  logs="$WORK/$name"
  mkdir -p "$logs"
  [ -n "$first_bdir" ] || first_bdir="$bdir"
  start=$(date +%s)

  step "$name: build everything with -Wall -Wextra -Wpedantic -Werror"
  full_build_args "$cxx" "$std"
  if [ "$i" -gt 0 ] && [ -n "${FULL_BUILD_OPT--O0 -DNDEBUG}" ]; then
    bt="${BUILD_TYPE:-RelWithDebInfo}"
    FULL_BUILD_ARGS+=("-DCMAKE_CXX_FLAGS_${bt^^}=${FULL_BUILD_OPT--O0 -DNDEBUG}")
    echo "(flags of $bt: ${FULL_BUILD_OPT--O0 -DNDEBUG})"
  fi
  FULL_BUILT[$name]=1
  # shellcheck disable=SC2086  # EXTRA_CMAKE_ARGS is a list
  quiet "$logs/configure.log" cmake -S "$ROOT" -B "$bdir" "${FULL_BUILD_ARGS[@]}" ${EXTRA_CMAKE_ARGS:-}
  cmake --build "$bdir" -j "$JOBS" >"$logs/build.log" 2>&1 || {
    grep -E -A5 'error|warning' "$logs/build.log" | head -n 100 >&2
    fail "$name: build"
  }
  # Every compiled target must carry the warning flags (they are not global).
  grep -q -e '-Wall -Wextra -Wpedantic -Werror' "$bdir/CMakeFiles/fairlock.dir/flags.make" ||
    fail "$name: the library is built without -Wall -Wextra -Wpedantic -Werror"
  while IFS= read -r flags; do
    grep -q -e '-Wall -Wextra -Wpedantic -Werror' "$flags" || fail "$name: ${flags#"$bdir"/} lacks the warning flags"
  done < <(find "$bdir" -name flags.make -path '*.dir/*')
  echo "built in $(seconds "$start") s"

  [ "${PKG_BUILD_ONLY:-0}" = 1 ] && continue
  if [ "$RUN_TESTS" = all ] || { [ "$RUN_TESTS" = one ] && [ "$i" -eq $((ncxx - 1)) ]; } ||
    { [ "$RUN_TESTS" = first ] && [ "$i" -eq 0 ]; }; then
    step "$name: tests"
    run_tests "$bdir" "$logs"
  fi
done

# --- 2. one install tree
[ "${PKG_BUILD_ONLY:-0}" = 1 ] && exit 0
prefix="$WORK/prefix"
step "install $(basename "$first_bdir") to $prefix"
quiet "$WORK/install.log" cmake --install "$first_bdir" --prefix "$prefix"
check_prefix "$prefix"
echo "layout, version $VERSION and fairlock.pc OK"

# --- 3. every compiler x standard: the public headers and the consumers
for cxx in "${COMPILERS[@]}"; do
  for std in "${STANDARDS[@]}"; do
    name="$(basename "$cxx")-c++$std"
    cdir="$WORK/$name/consumers"
    mkdir -p "$cdir"
    start=$(date +%s)

    step "$name: each installed public header alone, ${WARN_FLAGS[*]}"
    n=0
    for h in "$prefix"/include/fairlock/*.h; do
      printf '#include <fairlock/%s>\n' "$(basename "$h")" >"$cdir/header-$(basename "$h" .h).cpp"
      n=$((n + 1))
    done
    [ "$n" -ge 6 ] || fail "$name: only $n public headers installed"
    # one compiler process per header, $JOBS at a time
    quiet "$cdir/header.log" xargs -P "$JOBS" -n 1 "$cxx" -std="c++$std" "${WARN_FLAGS[@]}" -fsyntax-only \
      -I"$prefix/include" < <(printf '%s\n' "$cdir"/header-*.cpp)
    echo "$n headers OK"

    step "$name: consumer using find_package(fairlock)"
    quiet "$cdir/find_package.log" cmake -S "$ROOT/tests/consumers/find_package" -B "$cdir/find_package" \
      -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD="$std" -DCMAKE_PREFIX_PATH="$prefix" \
      -DFAIRLOCK_EXPECTED_VERSION="$VERSION"
    quiet "$cdir/find_package.log" cmake --build "$cdir/find_package" -j "$JOBS"
    "$cdir/find_package/consumer" || fail "$name: find_package consumer"

    if [ -n "${FULL_BUILT[$name]:-}" ]; then
      step "$name: add_subdirectory(fairlock) not built: the full build compiled the library in $name, -Werror"
    else
      step "$name: consumer using add_subdirectory(fairlock)"
      quiet "$cdir/subdirectory.log" cmake -S "$ROOT/tests/consumers/subdirectory" -B "$cdir/subdirectory" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_STANDARD="$std" -DCMAKE_CXX_STANDARD_REQUIRED=ON \
        -DCMAKE_CXX_EXTENSIONS=OFF -DFAIRLOCK_SOURCE_DIR="$ROOT" -DFAIRLOCK_WARNINGS_AS_ERRORS=ON
      quiet "$cdir/subdirectory.log" cmake --build "$cdir/subdirectory" -j "$JOBS"
      # The library's own sources were compiled in this standard, with -Werror.
      grep -q -e "-std=c++$std" "$cdir/subdirectory/fairlock/CMakeFiles/fairlock.dir/flags.make" ||
        fail "$name: add_subdirectory did not compile the library with -std=c++$std"
      grep -q -e '-Wall -Wextra -Wpedantic -Werror' "$cdir/subdirectory/fairlock/CMakeFiles/fairlock.dir/flags.make" ||
        fail "$name: add_subdirectory did not compile the library with the warning flags"
      # Only the library and the consumer are built, and nothing is installed.
      built="$(cd "$cdir/subdirectory" && find . -type f -perm -u+x ! -name '*.sh' ! -path '*/CMakeFiles/*' | sort)"
      [ "$built" = "./consumer" ] || fail "$name: add_subdirectory built more than the library: $built"
      quiet "$cdir/subdirectory.log" cmake --install "$cdir/subdirectory" --prefix "$cdir/subdirectory-install"
      [ -z "$(ls -A "$cdir/subdirectory-install" 2>/dev/null)" ] ||
        fail "$name: add_subdirectory(fairlock) installed files: $(find "$cdir/subdirectory-install" -type f)"
      "$cdir/subdirectory/consumer" || fail "$name: add_subdirectory consumer"
    fi

    step "$name: consumer using pkg-config and a plain compiler line"
    PKG_CONFIG_PATH="$prefix/lib/pkgconfig" CXX="$cxx" CXXSTD="c++$std" \
      "$ROOT/tests/consumers/pkg-config/build.sh" "$cdir/pkg-config-consumer" || fail "$name: pkg-config consumer build"
    "$cdir/pkg-config-consumer" || fail "$name: pkg-config consumer"

    echo "$name: OK in $(seconds "$start") s"
  done
done
printf '\npackaging check passed (%s x %s) in %s s\n' "${COMPILERS[*]}" "${STANDARDS[*]}" "$(seconds "$total_start")"

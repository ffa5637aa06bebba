#!/usr/bin/env bash
# Style check (CI): clang-format (.clang-format) and clang-tidy (.clang-tidy)
# over fairlock's C++ sources; exits non-zero on any finding.
#
#   scripts/check_style.sh [--format-only | --tidy-only]
#
# clang-format runs with --dry-run --Werror over src/, include/, tools/,
# examples/, tests/ (with tests/consumers/) and bench/. clang-tidy runs over
# every source file of the tree in the compile_commands.json of a clang++
# build configured in $STYLE_BUILD_DIR (default <repo>/build-style; only the
# generated headers are built). To fix formatting: clang-format-14 -i FILE...
#
# Environment: CLANG_FORMAT, CLANG_TIDY (default: the -14 binaries),
# STYLE_BUILD_DIR, JOBS (default: nproc).
# shellcheck source=scripts/common.sh
source "$(dirname "$0")/common.sh"

mode="${1:-all}"
case "$mode" in all | --format-only | --tidy-only) ;; *)
  echo "usage: $0 [--format-only | --tidy-only]" >&2
  exit 64
  ;;
esac

PACKAGES+=(clang clang-format-14 clang-tidy-14)
ensure_packages
CLANG_FORMAT="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format)}"
CLANG_TIDY="${CLANG_TIDY:-$(command -v clang-tidy-14 || command -v clang-tidy)}"
STYLE_BUILD_DIR="${STYLE_BUILD_DIR:-$ROOT/build-style}"
JOBS="${JOBS:-$(nproc)}"
cd "$ROOT" || exit 1

status=0

if [ "$mode" != --tidy-only ]; then
  echo "=== clang-format ($("$CLANG_FORMAT" --version | sed 's/.*version \([0-9.]*\).*/\1/'))"
  mapfile -t files < <(find src include tools examples tests bench -type f \( -name '*.cpp' -o -name '*.h' \) | sort)
  bad=()
  for f in "${files[@]}"; do
    "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    status=1
    echo "${#bad[@]} of ${#files[@]} files are not formatted (see: $CLANG_FORMAT --dry-run FILE; fix: $CLANG_FORMAT -i FILE):"
    printf '  %s\n' "${bad[@]}"
  else
    echo "${#files[@]} files formatted"
  fi
fi

if [ "$mode" != --format-only ]; then
  echo "=== clang-tidy ($("$CLANG_TIDY" --version | sed -n 's/.*version \([0-9.]*\).*/\1/p'))"
  cxx="$(command -v clang++ || command -v c++)"
  cmake -S "$ROOT" -B "$STYLE_BUILD_DIR" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null
  cmake --build "$STYLE_BUILD_DIR" --target fairlock_generated >/dev/null
  mapfile -t sources < <(python3 - "$STYLE_BUILD_DIR/compile_commands.json" "$ROOT" <<'EOF'
import json, os, sys
root = os.path.realpath(sys.argv[2])
for entry in json.load(open(sys.argv[1])):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    if path.startswith(root + os.sep) and not path.startswith(os.path.realpath(sys.argv[1]).rsplit(os.sep, 1)[0]):
        print(os.path.relpath(path, root))
EOF
  )
  outdir="$(mktemp -d)"
  trap 'rm -rf "$outdir"' EXIT
  export CLANG_TIDY STYLE_BUILD_DIR outdir
  # One output file per translation unit: <path with / as %>.out
  # shellcheck disable=SC2016  # expanded by the inner bash
  printf '%s\n' "${sources[@]}" | sort -u | xargs -P "$JOBS" -I{} bash -c \
    '"$CLANG_TIDY" -p "$STYLE_BUILD_DIR" --quiet "$1" >"$outdir/${1//\//%}.out" 2>&1 || true' _ {}
  broken=()
  for f in "$outdir"/*.out; do
    grep -q '\[clang-diagnostic-error\]' "$f" && broken+=("$(basename "${f%.out}" | tr % /)")
  done
  # One line per finding: path:line:col: message [check].
  findings="$(cat "$outdir"/*.out | grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' |
    grep -v '\[clang-diagnostic-error' | sed "s|^$ROOT/||" | sort -u || true)"
  if [ ${#broken[@]} -gt 0 ]; then
    status=1
    echo "${#broken[@]} translation units do not compile (under clang):"
    printf '  %s\n' "${broken[@]}"
  fi
  if [ -n "$findings" ]; then
    status=1
    echo "$(wc -l <<<"$findings") clang-tidy findings in ${#sources[@]} translation units:"
    sed -E 's/: (warning|error): /: /; s/,-warnings-as-errors\]$/]/' <<<"$findings" | sed 's/^/  /'
    echo "by check:"
    grep -oE '\[[A-Za-z0-9._,-]+\]$' <<<"$findings" | sed 's/,-warnings-as-errors//' | sort | uniq -c | sort -rn
  elif [ ${#broken[@]} -eq 0 ]; then
    echo "${#sources[@]} translation units clean"
  fi
fi

exit $status

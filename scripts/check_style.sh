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
# generated headers are built), once per distinct compile command, each in a
# process of its own (167 units: about 820 s on 2 cores with a cold cache,
# measured 2026-12-08 in a CI run, beside the TSan tests and valgrind). To fix
# formatting: clang-format-14 -i FILE...
#
# A unit that clang-tidy found clean is remembered in $TIDY_CACHE_DIR (default
# /tmp/fairlock-tidy-<uid>, outside the clone) under a hash of everything its
# findings depend on: clang-tidy's version, .clang-tidy, .clang-format, the
# compile command and the unit's preprocessed text (every header it includes,
# the system's too); the next run skips it. Empty (a fresh machine), it is a
# full run, and the hashes cost ~0.15 s CPU per unit (clang++ -E). Units with
# findings, or that do not compile, are never remembered.
#
# Environment: CLANG_FORMAT, CLANG_TIDY (default: the -14 binaries),
# STYLE_BUILD_DIR, JOBS (default: nproc), TIDY_CACHE_DIR ("" for no cache),
# TIDY_FULL=1 (the static analyzer on tests/ and bench/ too; see below),
# TIDY_FILES (a regex: only the units whose path, relative to the repository,
# matches it).
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
use_ccache
CLANG_FORMAT="${CLANG_FORMAT:-$(command -v clang-format-14 || command -v clang-format)}"
CLANG_TIDY="${CLANG_TIDY:-$(command -v clang-tidy-14 || command -v clang-tidy)}"
TIDY_CACHE_DIR="${TIDY_CACHE_DIR-/tmp/fairlock-tidy-$(id -u)}"
STYLE_BUILD_DIR="${STYLE_BUILD_DIR:-$ROOT/build-style}"
JOBS="${JOBS:-$(nproc)}"
cd "$ROOT" || exit 1

status=0

if [ "$mode" != --tidy-only ]; then
  echo "=== clang-format ($("$CLANG_FORMAT" --version | sed 's/.*version \([0-9.]*\).*/\1/'))"
  mapfile -t files < <(find src include tools examples tests bench -type f \( -name '*.cpp' -o -name '*.h' \) | sort)
  # A few processes over many files each (one per file cost ~9 s of process
  # starts); a file is bad when clang-format names it in an error.
  fmt_rc=0
  fmt_out="$(printf '%s\n' "${files[@]}" | xargs -P "$JOBS" -n 24 "$CLANG_FORMAT" --dry-run --Werror 2>&1)" || fmt_rc=$?
  mapfile -t bad < <(sed -n 's/^\([^ :][^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' <<<"$fmt_out" | sort -u)
  if [ $fmt_rc -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
    status=1
    echo "clang-format failed (exit status $fmt_rc) without naming a file:"
    head -40 <<<"$fmt_out"
  elif [ ${#bad[@]} -gt 0 ]; then
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
  outdir="$(mktemp -d)"
  trap 'rm -rf "$outdir"' EXIT
  # One clang-tidy process per distinct compile command, each given a
  # compile_commands.json of its own ($outdir/N/): run on a file that has
  # several commands, clang-tidy 14 analyses it once per command in one process
  # and carries analyzer state from one to the next (a spurious
  # clang-analyzer-valist.Uninitialized in bench/harness/common.cpp, which two programs
  # build). Commands that differ only in their output are run once
  # (tests/faults/main.cpp is in four test programs). Largest files first, so
  # that the longest runs do not start last.
  # The static analyzer (clang-analyzer-*) costs two thirds of a test unit's
  # clang-tidy time (tests/test_lock.cpp: 34 s CPU of 53) and analyses test
  # bodies, not the code users run: it runs on what ships (src/, include/
  # through them, tools/, examples/), and on tests/ and bench/ only with
  # TIDY_FULL=1 (every other check runs everywhere, always).
  mapfile -t units < <(python3 - "$STYLE_BUILD_DIR/compile_commands.json" "$ROOT" "$outdir" "${TIDY_FILES:-}" \
    "${TIDY_FULL:-0}" <<'EOF'
import json, os, re, shlex, sys
db, root, outdir, only, full = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
build = os.path.dirname(os.path.realpath(db))
seen, units = set(), []
for entry in json.load(open(db)):
    path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
    if not path.startswith(root + os.sep) or path.startswith(build + os.sep):
        continue
    if only and not re.search(only, os.path.relpath(path, root)):
        continue
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if "-o" in args:
        i = args.index("-o")
        args = args[:i] + args[i + 2:]
    key = (path, entry["directory"], tuple(args))
    if key not in seen:
        seen.add(key)
        units.append((-os.path.getsize(path), os.path.relpath(path, root), entry, args))
for n, (_, rel, entry, args) in enumerate(sorted(units, key=lambda u: u[:2])):
    os.mkdir(os.path.join(outdir, str(n)))
    with open(os.path.join(outdir, str(n), "compile_commands.json"), "w") as f:
        json.dump([entry], f)
    with open(os.path.join(outdir, str(n), "file"), "w") as f:
        f.write(rel)
    with open(os.path.join(outdir, str(n), "checks"), "w") as f:
        f.write("-clang-analyzer-*" if full != "1" and rel.split(os.sep)[0] in ("tests", "bench") else "")
    # The unit's preprocessor command (for its cache key), args without -o
    # and with -E -C -dD for -c: the text with its comments (NOLINT) and its
    # macro definitions (checks of macros), every header included.
    pp = []
    for a in args:
        pp += ["-E", "-C", "-dD"] if a == "-c" else [a]
    with open(os.path.join(outdir, str(n), "pp"), "w") as f:
        f.write("\0".join(pp) + "\0")
    with open(os.path.join(outdir, str(n), "dir"), "w") as f:
        f.write(entry["directory"])
    print(n)
EOF
  )
  # What every unit's findings depend on besides its own command and text.
  if [ -n "$TIDY_CACHE_DIR" ]; then
    mkdir -p "$TIDY_CACHE_DIR"
    { "$CLANG_TIDY" --version; find "$ROOT" \( -name .clang-tidy -o -name .clang-format \) -not -path "$ROOT/build*" |
      sort | xargs cat; } | sha256sum >"$outdir/common.key"
  fi
  export CLANG_TIDY outdir TIDY_CACHE_DIR
  # Per unit: N.out (diagnostics), N.rc (exit status: 0 clean, 1 findings),
  # N.cached when the cache knew it clean.
  printf '%s\n' "${units[@]}" | xargs -P "$JOBS" -I{} bash "$ROOT/scripts/tidy_unit.sh" {}
  broken=()
  for n in "${units[@]}"; do
    f="$(cat "$outdir/$n/file")"
    rc="$(cat "$outdir/$n.rc" 2>/dev/null || echo none)"
    if grep -q '\[clang-diagnostic-error\]' "$outdir/$n.out"; then
      broken+=("$f")
    elif [ "$rc" != 0 ] && [ "$rc" != 1 ]; then  # a crash: no diagnostics to trust
      broken+=("$f (clang-tidy exit status $rc)")
    fi
  done
  # One line per finding: path:line:col: message [check].
  cached=$(find "$outdir" -maxdepth 1 -name '*.cached' | wc -l)
  [ -z "$TIDY_CACHE_DIR" ] || echo "$cached of ${#units[@]} units known clean from the cache ($TIDY_CACHE_DIR)"
  findings="$(cat "$outdir"/*.out | grep -E '^[^ ].*:[0-9]+:[0-9]+: (warning|error): ' |
    grep -v '\[clang-diagnostic-error' | sed "s|^$ROOT/||" | sort -u || true)"
  if [ ${#broken[@]} -gt 0 ]; then
    status=1
    echo "${#broken[@]} translation units do not compile (under clang) or crash clang-tidy:"
    printf '  %s\n' "${broken[@]}"
  fi
  if [ -n "$findings" ]; then
    status=1
    echo "$(wc -l <<<"$findings") clang-tidy findings in ${#units[@]} translation units:"
    sed -E 's/: (warning|error): /: /; s/,-warnings-as-errors\]$/]/' <<<"$findings" | sed 's/^/  /'
    echo "by check:"
    grep -oE '\[[A-Za-z0-9._,-]+\]$' <<<"$findings" | sed 's/,-warnings-as-errors//' | sort | uniq -c | sort -rn
  elif [ ${#broken[@]} -eq 0 ]; then
    echo "${#units[@]} translation units clean"
  fi
fi

exit $status

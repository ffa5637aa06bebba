#!/usr/bin/env bash
# clang-tidy over one unit of scripts/check_style.sh (which runs this, several
# at a time): tidy_unit.sh N, with the unit's files in $outdir/N/
# (compile_commands.json, file, pp: its preprocessor command, NUL-separated,
# dir: where to run it, checks: this unit's --checks on top of .clang-tidy, or
# empty). Writes $outdir/N.out (diagnostics) and $outdir/N.rc (clang-tidy's
# exit status: 0 clean, 1 findings).
# With $TIDY_CACHE_DIR set, the unit's key is the hash of $outdir/common.key
# (clang-tidy's version and configuration), its preprocessor command, checks
# and output; a unit found clean leaves a file named by its key there, and a unit
# whose key is there is not run again (N.cached). A unit whose preprocessing
# fails has no key: clang-tidy runs and reports why it does not compile.
set -uo pipefail
n=$1
outdir="${outdir:?exported by check_style.sh}"
unit="$outdir/$n"

unit_key() {
  local text pp
  mapfile -d '' -t pp <"$unit/pp"
  [ ${#pp[@]} -gt 0 ] || return 1
  text="$(cd "$(cat "$unit/dir")" && "${pp[@]}" 2>/dev/null | sha256sum)" || return 1
  { cat "$outdir/common.key" "$unit/pp" "$unit/checks"; echo "$text"; } | sha256sum | cut -d' ' -f1
}

key=""
if [ -n "${TIDY_CACHE_DIR:-}" ]; then
  key="$(unit_key)" || key=""
  if [ -n "$key" ] && [ -e "$TIDY_CACHE_DIR/$key" ]; then
    : >"$outdir/$n.out"
    echo 0 >"$outdir/$n.rc"
    touch "$outdir/$n.cached"
    exit 0
  fi
fi
rc=0
checks=()
[ -s "$unit/checks" ] && checks=("--checks=$(cat "$unit/checks")")
"$CLANG_TIDY" -p "$unit" --quiet ${checks[@]+"${checks[@]}"} "$(cat "$unit/file")" >"$outdir/$n.out" 2>&1 || rc=$?
echo "$rc" >"$outdir/$n.rc"
# Clean: exit status 0 and not one diagnostic line.
if [ -n "$key" ] && [ "$rc" = 0 ] && ! grep -qE ':[0-9]+:[0-9]+: (warning|error): ' "$outdir/$n.out"; then
  touch "$TIDY_CACHE_DIR/$key"
fi
exit 0

#!/bin/sh
# Builds main.cpp into OUTPUT with one plain compiler line. fairlock must be
# visible to pkg-config (PKG_CONFIG_PATH=<prefix>/lib/pkgconfig). --static is
# needed because libfairlock is a static library: it adds hiredis, spdlog, fmt.
# Usage: [CXX=clang++] [CXXSTD=c++20] build.sh OUTPUT
set -eu
out="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
cd "$(dirname "$0")"
# shellcheck disable=SC2046  # pkg-config's output is meant to be split
"${CXX:-c++}" -std="${CXXSTD:-c++17}" -Wall -Wextra -Wpedantic -Werror main.cpp \
  $(pkg-config --cflags --libs --static fairlock) -o "$out"

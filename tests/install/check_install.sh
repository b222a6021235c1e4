#!/usr/bin/env bash
# Installs the build into a temporary prefix, then builds and runs consumers against it: the
# core and each front end the build has, through find_package(loom CONFIG COMPONENTS ...) and
# through pkg-config; and asks for components it lacks, which must fail with a clear message.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

# consume FRONT_END: builds and runs tests/install/FRONT_END_consumer through
# find_package(loom COMPONENTS FRONT_END) and through pkg-config's loom-FRONT_END.
consume() {
  local fe=$1
  cmake -S "$src/tests/install/${fe}_consumer" -B "$tmp/${fe}_consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
  cmake --build "$tmp/${fe}_consumer" >/dev/null
  "$tmp/${fe}_consumer/${fe}_consumer"
  # shellcheck disable=SC2046
  c++ -std=c++23 -o "$tmp/pc-$fe" "$src/tests/install/${fe}_consumer/main.cpp" $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs "loom-$fe")
  "$tmp/pc-$fe"
}

cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
"$tmp/consumer/consumer"
# The sender front end, through find_package(loom COMPONENTS execution) and pkg-config, where
# this installation has it.
if [ -f "$tmp/prefix/lib/pkgconfig/loom-execution.pc" ]; then
  consume execution
fi
# The Asio front end, through find_package(loom COMPONENTS asio) and pkg-config (Asio's headers
# from the system), where this installation has it.
if [ -f "$tmp/prefix/lib/pkgconfig/loom-asio.pc" ]; then
  consume asio
  # Without Asio on the include path, find_package(loom COMPONENTS asio) must fail clearly.
  mkdir -p "$tmp/no-asio"
  cat >"$tmp/no-asio/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(no_asio LANGUAGES CXX)
set(CMAKE_FIND_ROOT_PATH "$tmp/prefix")
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
find_package(loom CONFIG REQUIRED COMPONENTS asio)
CM
  if cmake -S "$tmp/no-asio" -B "$tmp/no-asio/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/no-asio.log" 2>&1; then
    echo "find_package(loom COMPONENTS asio) succeeded where no Asio can be found" >&2
    exit 1
  fi
  grep -q 'loom::asio needs Asio' "$tmp/no-asio.log" || { echo "no clear message when Asio is missing:" >&2; cat "$tmp/no-asio.log" >&2; exit 1; }
fi
# A component this installation was not built with makes find_package fail, naming it: a front
# end left out of this build where one was, and an unknown name in any case.
missing=(nonesuch)
[ -f "$tmp/prefix/lib/pkgconfig/loom-asio.pc" ] || missing+=(asio)
[ -f "$tmp/prefix/lib/pkgconfig/loom-execution.pc" ] || missing+=(execution)
for m in "${missing[@]}"; do
  mkdir -p "$tmp/bad-$m"
  cat >"$tmp/bad-$m/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.25)
project(bad LANGUAGES CXX)
find_package(loom CONFIG REQUIRED COMPONENTS core $m)
CM
  if cmake -S "$tmp/bad-$m" -B "$tmp/bad-$m/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/bad-$m.log" 2>&1; then
    echo "find_package(loom COMPONENTS $m) succeeded on an installation without that component" >&2
    exit 1
  fi
  grep -q "loom component '$m' was not built into this installation" "$tmp/bad-$m.log" ||
    { echo "no clear message for the missing component $m:" >&2; cat "$tmp/bad-$m.log" >&2; exit 1; }
done
PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --exists loom
# shellcheck disable=SC2046
c++ -o "$tmp/pc-consumer" "$src/tests/install/consumer/main.cpp" $(PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig" pkg-config --cflags --libs loom)
"$tmp/pc-consumer"
echo "install check: find_package and pkg-config consumers built and ran"

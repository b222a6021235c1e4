#!/usr/bin/env bash
# The LOOM_FETCHCONTENT_* options, configured without a network: FETCHCONTENT_SOURCE_DIR_<NAME>
# stands in for the download. A local copy laid out as upstream's Asio repository is used for
# the build's Asio; an empty copy, or a fetch option without its backend, is a configuration
# error that says what is wrong.
set -euo pipefail
src=$1 libfabric_prefix=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
base=(-G Ninja -DBUILD_TESTING=OFF -DLOOM_BUILD_TOOLS=OFF -DLOOM_BUILD_BENCHMARKS=OFF)
[ -z "$libfabric_prefix" ] || base+=(-DLOOM_LIBFABRIC_PREFIX="$libfabric_prefix")

# configure NAME ARGS...: configures a fresh build of loom into $tmp/NAME; its log in $tmp/NAME.log.
configure() {
  local name=$1
  shift
  cmake -S "$src" -B "$tmp/$name" "${base[@]}" "$@" >"$tmp/$name.log" 2>&1
}
# refused NAME TEXT ARGS...: the configuration must fail and its log must contain TEXT.
refused() {
  local name=$1 text=$2
  shift 2
  if configure "$name" "$@"; then
    echo "configuring with $* succeeded; it must fail" >&2
    exit 1
  fi
  # (CMake wraps its messages: compared with the lines joined.)
  tr -s ' \n' '  ' <"$tmp/$name.log" | grep -qF "$text" ||
    { echo "no '$text' in the refusal of $*:" >&2; cat "$tmp/$name.log" >&2; exit 1; }
}

# Asio as upstream's repository lays it out (asio/include/asio.hpp), here from the system's copy.
asio_include=$(dirname "$(echo '#include <asio.hpp>' | c++ -x c++ -M - 2>/dev/null | tr ' ' '\n' | grep '/asio\.hpp$' | head -1)")
mkdir -p "$tmp/asio-src/asio/include"
ln -s "$asio_include/asio.hpp" "$asio_include/asio" "$tmp/asio-src/asio/include/"
configure asio -DLOOM_FETCHCONTENT_ASIO=ON -DFETCHCONTENT_SOURCE_DIR_ASIO="$tmp/asio-src" ||
  { cat "$tmp/asio.log" >&2; exit 1; }
grep -qF "loom: Asio front end built ($tmp/asio-src/asio/include)" "$tmp/asio.log" ||
  { echo "the Asio front end does not use the fetched headers:" >&2; cat "$tmp/asio.log" >&2; exit 1; }

mkdir -p "$tmp/empty"
refused asio-empty "the fetched asio has no asio.hpp" -DLOOM_FETCHCONTENT_ASIO=ON -DFETCHCONTENT_SOURCE_DIR_ASIO="$tmp/empty"
refused stdexec-alone "LOOM_FETCHCONTENT_STDEXEC=ON needs LOOM_USE_STDEXEC=ON" -DLOOM_FETCHCONTENT_STDEXEC=ON
refused beman-alone "LOOM_FETCHCONTENT_BEMAN_EXECUTION=ON needs LOOM_USE_BEMAN_EXECUTION=ON" \
  -DLOOM_FETCHCONTENT_BEMAN_EXECUTION=ON
refused stdexec-empty "the fetched stdexec has no stdexec/execution.hpp" -DLOOM_USE_STDEXEC=ON \
  -DLOOM_FETCHCONTENT_STDEXEC=ON -DFETCHCONTENT_SOURCE_DIR_STDEXEC="$tmp/empty"
refused beman-empty "the fetched beman_execution has no beman/execution/execution.hpp" -DLOOM_USE_BEMAN_EXECUTION=ON \
  -DLOOM_FETCHCONTENT_BEMAN_EXECUTION=ON -DFETCHCONTENT_SOURCE_DIR_BEMAN_EXECUTION="$tmp/empty"
# Without a fetch, a backend that is not installed, and two backends at once, are refused too.
refused stdexec-missing "no stdexec package was found" -DLOOM_USE_STDEXEC=ON
refused two-backends "choose one sender backend" -DLOOM_USE_STDEXEC=ON -DLOOM_USE_BEMAN_EXECUTION=ON
echo "fetchcontent check: the fetched Asio builds the front end; missing sources and lone options are refused"

#!/usr/bin/env bash
# LOOM_LIBFABRIC_STATIC=ON: refused against a shared-only libfabric with a clear message; against
# the archive scripts/setup builds, libloom carries libfabric (no libfabric.so needed, none of
# its symbols exported) and two processes exchange messages through it, byte-checked, over
# shm and tcp; a consumer built with the installed pkg-config file runs too.
set -euo pipefail
src=$1 shared_prefix=$2
deps=${LOOM_DEPS:-$HOME/.cache/loom}
static_prefix=$deps/libfabric-2.1.0-static
[ -f "$static_prefix/lib/libfabric.a" ] || { echo "no libfabric archive in $static_prefix: run scripts/setup" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLOOM_BUILD_TESTS=OFF -DLOOM_BUILD_BENCHMARKS=OFF)

if compgen -G "$shared_prefix/lib*/libfabric.a" >/dev/null; then
  echo "$shared_prefix has an archive too: the refusal is not checked"
elif cmake -S "$src" -B "$tmp/refused" "${common[@]}" -DLOOM_LIBFABRIC_STATIC=ON \
     -DLOOM_LIBFABRIC_PREFIX="$shared_prefix" >"$tmp/refused.log" 2>&1; then
  echo "LOOM_LIBFABRIC_STATIC=ON configured against the shared-only libfabric in $shared_prefix" >&2
  exit 1
elif ! grep -q 'LOOM_LIBFABRIC_STATIC=ON needs the libfabric archive' "$tmp/refused.log"; then
  echo "no clear message for a shared-only libfabric:" >&2; cat "$tmp/refused.log" >&2; exit 1
fi

cmake -S "$src" -B "$tmp/build" "${common[@]}" -DLOOM_LIBFABRIC_STATIC=ON \
  -DLOOM_LIBFABRIC_PREFIX="$static_prefix" -DCMAKE_INSTALL_PREFIX="$tmp/prefix" >"$tmp/configure.log" 2>&1 \
  || { cat "$tmp/configure.log" >&2; exit 1; }
cmake --build "$tmp/build" --target loom loom-pingpong loom-info >"$tmp/build.log" 2>&1 || { tail -30 "$tmp/build.log" >&2; exit 1; }
lib=$(find "$tmp/build/loom" -name 'libloom.so.*.*' | head -n 1)
deps_of=$(ldd "$lib")
if grep -q libfabric <<<"$deps_of"; then
  echo "the static libloom still needs a shared libfabric:" >&2; echo "$deps_of" >&2; exit 1
fi
exported=$(nm -D --defined-only "$lib")
if grep -qw fi_getinfo <<<"$exported"; then echo "libloom exports libfabric's interface" >&2; exit 1; fi
for prov in shm tcp; do
  "$tmp/build/loom/loom-pingpong" -p "$prov" -n 50 -m 65536 >"$tmp/pingpong-$prov.log" 2>&1 \
    || { echo "loom-pingpong over $prov with the static libloom failed:" >&2; cat "$tmp/pingpong-$prov.log" >&2; exit 1; }
done

# The installed library and pkg-config file: no -lfabric, and a consumer that runs.
cmake --install "$tmp/build/loom" >/dev/null
pc="$tmp/prefix/lib/pkgconfig"
[ -d "$pc" ] || pc=$(dirname "$(find "$tmp/prefix" -name loom.pc | head -n 1)")
if grep -q -- -lfabric <<<"$(PKG_CONFIG_PATH="$pc" pkg-config --libs loom)"; then
  echo "loom.pc of a static build still links -lfabric" >&2; exit 1
fi
# shellcheck disable=SC2046
c++ -std=c++23 -o "$tmp/consumer" "$src/tests/install/consumer/main.cpp" $(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs loom)
"$tmp/consumer"

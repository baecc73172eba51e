#!/usr/bin/env bash
# The project's Gloo recipe: Debian's gloo source (trixie, fetched by apt from the archive whose
# InRelease apt checks against debian-archive-keyring; the tarballs pinned below by sha256, as the
# signed Sources index lists them), Debian's own patches applied, built TCP-only, static, -fPIC and
# -fvisibility=hidden. The result is cached: .cache/gloo/<version>-<toolchain>/install.
#
#   bash recipes/gloo/build.sh [PREFIX_FILE]   # prints the install prefix (and writes it to PREFIX_FILE)
#
# Environment: GLOO_CACHE_DIR (default <repo>/.cache/gloo), CXX, GLOO_JOBS (default 2).
# GLOO_FETCH_ONLY=1: fetch and check the source tarballs into $GLOO_CACHE_DIR/sources, build nothing
# (the CI job does this on its runner, where apt-get is, for a builder image that has none).
# With the tarballs in $GLOO_CACHE_DIR/sources the recipe needs no apt-get.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${GLOO_CACHE_DIR:-$REPO_ROOT/.cache/gloo}"
mkdir -p "$CACHE" && CACHE="$(cd "$CACHE" && pwd)"  # absolute: apt reads a relative Dir:: path under /etc/apt
JOBS="${GLOO_JOBS:-2}"

# Pinned from the signed Sources index of Debian trixie (apt-cache showsrc gloo, Checksums-Sha256).
VERSION="0.0~git20231202.5354032"
DEB_REVISION="3"
ORIG="gloo_${VERSION}.orig.tar.xz"
ORIG_SHA256="66d6fadb7b07cfcff08f74ae2acfab504e780d6b7536ee74d2011718cda25030"
DEBIAN="gloo_${VERSION}-${DEB_REVISION}.debian.tar.xz"
DEBIAN_SHA256="b5ee771590c7aa48615ec6ebf582d535b212cf913aef1946d4c12d0f63e61398"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg

die() { echo "recipes/gloo: $*" >&2; exit 1; }

cxx="${CXX:-c++}"
command -v "$cxx" >/dev/null || die "no C++ compiler '$cxx' (install g++ or set CXX)"
toolchain="$("$cxx" -dumpfullversion -dumpversion 2>/dev/null | head -1)"
toolchain="$(basename "$cxx" | tr "+" "x")-${toolchain}"  # gloo's CMake uses the path as a regex: no "+"
flags_id="tcp-static-pic-hidden-v1"
build_id="${VERSION//\~/_}-${DEB_REVISION}-${toolchain}-${flags_id}"
prefix="$CACHE/$build_id/install"

report() { echo "$prefix"; [ "${1:-}" = "" ] || echo "$prefix" >"$1"; }

if [ "${GLOO_FETCH_ONLY:-}" != "1" ] && [ -f "$prefix/lib/libgloo.a" ] && [ -f "$prefix/.complete" ]; then
  echo "recipes/gloo: cached build $prefix" >&2
  report "${1:-}"; exit 0
fi

src_dir="$CACHE/sources"
mkdir -p "$src_dir"
check_sha() {  # check_sha FILE SHA256
  [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status
}
if ! check_sha "$src_dir/$ORIG" "$ORIG_SHA256" || ! check_sha "$src_dir/$DEBIAN" "$DEBIAN_SHA256"; then
  command -v apt-get >/dev/null || die "apt-get is needed to fetch Debian's gloo source"
  [ -f "$KEYRING" ] || die "$KEYRING missing: apt-get install debian-archive-keyring"
  apt_dir="$CACHE/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts"
  # A private sources list: the system's apt configuration is left untouched.
  echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian trixie main" >"$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/parts"
            -o "Dir::State::Lists=$apt_dir/lists")
  echo "recipes/gloo: fetching Debian's gloo source (apt-get source --download-only)" >&2
  apt-get -qq "${apt_opts[@]}" update >&2 || die "apt-get update of the trixie deb-src index failed"
  # The .dsc itself may be missing from a mirror; the tarballs are what the build uses and apt checks
  # them against the signed index. --download-only exits non-zero when any file is missing, so the
  # tarballs are checked below rather than trusting its status.
  (cd "$src_dir" && apt-get -qq "${apt_opts[@]}" source --download-only "gloo=${VERSION}-${DEB_REVISION}" >&2) || true
  [ -f "$src_dir/gloo_${VERSION}-${DEB_REVISION}.dsc" ] ||
    echo "recipes/gloo: (the .dsc is not on this mirror: apt's errors about it above are expected; the tarballs are checked below)" >&2
  check_sha "$src_dir/$ORIG" "$ORIG_SHA256" || die "$ORIG missing or its sha256 is not the pinned $ORIG_SHA256"
  check_sha "$src_dir/$DEBIAN" "$DEBIAN_SHA256" || die "$DEBIAN missing or its sha256 is not the pinned $DEBIAN_SHA256"
fi

if [ "${GLOO_FETCH_ONLY:-}" = "1" ]; then
  echo "recipes/gloo: sources checked in $src_dir" >&2
  exit 0
fi

work="$CACHE/$build_id"
rm -rf "$work/src" "$work/build" "$prefix"
mkdir -p "$work/src"
tar -C "$work/src" -xf "$src_dir/$ORIG"
tar -C "$work/src" -xf "$src_dir/$DEBIAN"
# Debian's quilt series (build fixes such as missing #include <array>).
while read -r patch; do
  case "$patch" in ''|'#'*) continue ;; esac
  patch -s -d "$work/src" -p1 <"$work/src/debian/patches/$patch" || die "Debian patch $patch does not apply"
done <"$work/src/debian/patches/series"

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$work/src" -B "$work/build" "${generator[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DCMAKE_CXX_FLAGS="-fvisibility=hidden -fvisibility-inlines-hidden" \
  -DUSE_REDIS=OFF -DUSE_IBVERBS=OFF -DUSE_MPI=OFF -DUSE_LIBUV=OFF -DUSE_NCCL=OFF -DUSE_RCCL=OFF \
  -DUSE_CUDA=OFF -DUSE_ROCM=OFF -DUSE_TCP_OPENSSL_LINK=OFF -DUSE_TCP_OPENSSL_LOAD=OFF \
  -DBUILD_TEST=OFF -DBUILD_BENCHMARK=OFF >"$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log" >&2; die "cmake configure failed (log: $work/configure.log)"; }
cmake --build "$work/build" -j "$JOBS" >"$work/build.log" 2>&1 \
  || { tail -30 "$work/build.log" >&2; die "build failed (log: $work/build.log)"; }
cmake --install "$work/build" >"$work/install.log" 2>&1 || die "install failed (log: $work/install.log)"
[ -f "$prefix/lib/libgloo.a" ] || die "no $prefix/lib/libgloo.a after install"
touch "$prefix/.complete"
rm -rf "$work/build" "$work/src"
report "${1:-}"

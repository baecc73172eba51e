#!/usr/bin/env bash
# The project's BVLC Caffe recipe: Debian bullseye's caffe source (1.0.0+git20180821.99bd997, the tree of
# BVLC/caffe commit 99bd99795dcdf0b1d3086a8d67ab1782a8a08383; Debian's own patches are NOT applied),
# fetched by apt from the archive whose InRelease apt checks against debian-archive-keyring, the tarball
# pinned below by sha256 as the signed Sources index lists it and every file checked against
# recipes/caffe/source.sha256; then our patches applied with `git apply` and Caffe built CPU_ONLY with
# ccache. Nothing of it is committed.
#
#   bash recipes/caffe/build.sh source [OUT_FILE]   # checked, unpatched tree: prints its directory
#   bash recipes/caffe/build.sh build  [OUT_FILE]   # patched + built: prints the build directory
#                                                   # (tools/caffe, lib/libcaffe.so)
# build needs PERSEUS_CAFFE_PREFIX: an installed libperseus-caffe (lib/libperseus-caffe.so,
# include/perseus/caffe.h; native/bindings/caffe). Unchanged inputs: the cached build, nothing run.
#
# Environment: CAFFE_CACHE_DIR (default <repo>/.cache/caffe), CAFFE_JOBS (default 2), CXX,
# CAFFE_PATCHES ("1 2 3" default: which of patches/bvlc_caffe to apply, in order), CCACHE_DIR
# (default $CAFFE_CACHE_DIR/ccache).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$HERE/../.." && pwd)"
CACHE="${CAFFE_CACHE_DIR:-$REPO_ROOT/.cache/caffe}"
JOBS="${CAFFE_JOBS:-2}"

# Pinned from the signed Sources index of Debian bullseye (apt-cache showsrc caffe, Checksums-Sha256).
VERSION="1.0.0+git20180821.99bd997"
ORIG="caffe_${VERSION}.orig.tar.gz"
ORIG_SHA256="e0eb3f06794f7402c77b7dec8e8480273ee1a1bb192e9122b621a69d4147ad0c"
DEB_REVISION="8"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
FILE_LIST="$HERE/source.sha256"
COMPAT_PATCH="$HERE/patches/compat_debian_bookworm.patch"

die() { echo "recipes/caffe: $*" >&2; exit 1; }
report() { echo "$1"; [ -z "${2:-}" ] || echo "$1" >"$2"; }
check_sha() { [ -f "$1" ] && echo "$2  $1" | sha256sum --check --status; }

fetch_tarball() {  # the signature-checked orig tarball in $CACHE/sources
  local src_dir="$CACHE/sources"
  mkdir -p "$src_dir"
  check_sha "$src_dir/$ORIG" "$ORIG_SHA256" && return 0
  command -v apt-get >/dev/null || die "apt-get is needed to fetch Debian's caffe source"
  [ -f "$KEYRING" ] || die "$KEYRING missing: apt-get install debian-archive-keyring"
  local apt_dir="$CACHE/apt"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts"
  # A private sources list: the system's apt configuration is left untouched.
  echo "deb-src [signed-by=$KEYRING] http://deb.debian.org/debian bullseye main" >"$apt_dir/sources.list"
  local apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/parts"
                  -o "Dir::State::Lists=$apt_dir/lists")
  echo "recipes/caffe: fetching Debian bullseye's caffe source (apt-get source --download-only)" >&2
  apt-get -qq "${apt_opts[@]}" update >&2 || die "apt-get update of the bullseye deb-src index failed"
  # apt checks the downloaded files against the signed Sources index; the sha256 pin below is ours
  (cd "$src_dir" && apt-get -qq "${apt_opts[@]}" source --download-only "caffe=${VERSION}-${DEB_REVISION}" >&2) || true
  check_sha "$src_dir/$ORIG" "$ORIG_SHA256" || die "$ORIG missing or its sha256 is not the pinned $ORIG_SHA256"
}

# source: the unpatched tree, every file checked against source.sha256 (and no file more)
source_tree() {
  local tree="$CACHE/source-$VERSION"
  if [ -f "$tree/.checked" ]; then echo "$tree"; return 0; fi
  fetch_tarball
  rm -rf "$tree" "$tree.tmp"
  mkdir -p "$tree.tmp"
  tar -C "$tree.tmp" -xzf "$CACHE/sources/$ORIG"
  (cd "$tree.tmp" && sha256sum --quiet --strict --check "$FILE_LIST" >&2) ||
    die "the unpacked tree does not match $FILE_LIST"
  local have want
  have="$(cd "$tree.tmp" && find . -type f -o -type l | wc -l)"
  want="$(wc -l <"$FILE_LIST")"
  [ "$have" = "$want" ] || die "the unpacked tree has $have files, $FILE_LIST lists $want"
  touch "$tree.tmp/.checked"
  mv "$tree.tmp" "$tree"
  echo "$tree"
}

# The patches in the order given, with git apply as the manual does. The tree gets its own repository:
# inside another one (this checkout's .cache) git apply would take paths relative to that repository
# and silently skip every file.
apply_patches() {  # apply_patches DIR
  local n p
  git -C "$1" init -q
  for n in ${CAFFE_PATCHES:-1 2 3}; do
    p=$(ls "$HERE"/patches/bvlc_caffe/"${n}"_*.patch 2>/dev/null | head -1)
    [ -n "$p" ] || die "no patches/bvlc_caffe/${n}_*.patch (CAFFE_PATCHES=${CAFFE_PATCHES:-1 2 3})"
    git -C "$1" apply --whitespace=nowarn "$p" || die "$(basename "$p") does not apply"
  done
  git -C "$1" apply --whitespace=nowarn "$COMPAT_PATCH" || die "$(basename "$COMPAT_PATCH") does not apply"
}

build() {
  [ -n "${PERSEUS_CAFFE_PREFIX:-}" ] || die "PERSEUS_CAFFE_PREFIX is not set: build and install native/bindings/caffe first (aiacc-build caffe build does)"
  local lib="$PERSEUS_CAFFE_PREFIX/lib/libperseus-caffe.so" header="$PERSEUS_CAFFE_PREFIX/include/perseus/caffe.h"
  [ -f "$lib" ] && [ -f "$header" ] || die "no $lib or $header: install native/bindings/caffe to PERSEUS_CAFFE_PREFIX"
  local cxx="${CXX:-c++}"
  command -v "$cxx" >/dev/null || die "no C++ compiler '$cxx' (install g++ or set CXX)"
  command -v ccache >/dev/null || die "ccache missing: apt-get install ccache"
  local tree; tree="$(source_tree)"
  # The build's identity: source, patches, this script, compiler, the Caffe-facing header. The library
  # itself is linked by its SONAME, so a rebuilt libperseus-caffe.so needs no Caffe rebuild.
  local key
  key="$( { echo "$ORIG_SHA256 patches=${CAFFE_PATCHES:-1 2 3}"; "$cxx" --version | head -1
            cat "$HERE/build.sh" "$COMPAT_PATCH" "$header"
            for n in ${CAFFE_PATCHES:-1 2 3}; do cat "$HERE"/patches/bvlc_caffe/"${n}"_*.patch; done; } |
          sha256sum | cut -c1-16)"
  local work="$CACHE/build-$key"
  if [ -f "$work/.complete" ] && [ -x "$work/build/tools/caffe" ]; then
    echo "recipes/caffe: cached build $work/build" >&2
    report "$work/build" "${1:-}"; return 0
  fi
  rm -rf "$work"
  mkdir -p "$work"
  cp -a "$tree" "$work/src"
  apply_patches "$work/src"
  export CCACHE_DIR="${CCACHE_DIR:-$CACHE/ccache}"
  # ccache hits across build directories: paths relative to the build's base
  export CCACHE_BASEDIR="$work" CCACHE_NOHASHDIR=1
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$work/src" -B "$work/build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache \
    -DCPU_ONLY=ON -DBLAS=open -DUSE_OPENCV=ON -DUSE_LEVELDB=OFF -DUSE_LMDB=OFF -DUSE_HDF5=ON \
    -DBUILD_python=OFF -DBUILD_python_layer=OFF -DBUILD_matlab=OFF -DBUILD_docs=OFF \
    -DUSE_PERSEUS=ON -DPERSEUS_LIBRARY_PATH="$lib" >"$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log" >&2; die "cmake configure failed (log: $work/configure.log)"; }
  grep -q "AIACC-Training (Perseus): $lib" "$work/configure.log" || die "Caffe was configured without libperseus-caffe (log: $work/configure.log)"
  cmake --build "$work/build" -j "$JOBS" --target caffe.bin >"$work/build.log" 2>&1 \
    || { grep -B2 -A12 -m3 "error" "$work/build.log" >&2 || tail -30 "$work/build.log" >&2
         die "build failed (log: $work/build.log)"; }
  [ -x "$work/build/tools/caffe" ] || die "no $work/build/tools/caffe after the build"
  touch "$work/.complete"
  report "$work/build" "${1:-}"
}

case "${1:-}" in
  source) shift; report "$(source_tree)" "${1:-}" ;;
  build) shift; build "${1:-}" ;;
  *) die "usage: build.sh source|build [OUT_FILE]" ;;
esac

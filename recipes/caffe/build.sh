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
#   bash recipes/caffe/build.sh cudnn-layer BUILD   # patch 2's cuDNN layer alone, with nvcc (see below)
# build needs PERSEUS_CAFFE_PREFIX: an installed libperseus-caffe (lib/libperseus-caffe.so,
# include/perseus/caffe.h; native/bindings/caffe). Unchanged inputs: the cached build, nothing run.
#
# Environment: CAFFE_CACHE_DIR (default <repo>/.cache/caffe), CAFFE_JOBS (default 2), CXX,
# CAFFE_SOURCE_ARCHIVES ("URL SUITE" lines: where the source is fetched from, tried in order),
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

# Where bullseye's source is fetched from, in order: "URL SUITE" per line (CAFFE_SOURCE_ARCHIVES overrides).
# deb.debian.org serves bullseye until it moves to archive.debian.org; snapshot.debian.org keeps every past
# state of the archive (a pinned timestamp while bullseye still held caffe 1.0.0+git20180821.99bd997-8).
# Each one is tried through apt (InRelease checked against the keyring, the tarball against the signed
# Sources index), then by a plain download of the pool path; either way the tarball must have the pinned
# sha256 below, so a fallback can never hand over other bytes.
DEFAULT_ARCHIVES="http://deb.debian.org/debian bullseye
http://archive.debian.org/debian bullseye
http://snapshot.debian.org/archive/debian/20250101T000000Z bullseye"
POOL_PATH="pool/main/c/caffe/$ORIG"

fetch_with_apt() {  # fetch_with_apt URL SUITE DEST_DIR N
  local url="$1" suite="$2" dest="$3" apt_dir="$CACHE/apt/$4"
  [ -f "$KEYRING" ] || { echo "recipes/caffe: $KEYRING missing (apt-get install debian-archive-keyring)" >&2; return 1; }
  command -v apt-get >/dev/null || { echo "recipes/caffe: no apt-get" >&2; return 1; }
  rm -rf "$apt_dir"
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/parts"
  # A private sources list: the system's apt configuration is left untouched.
  echo "deb-src [signed-by=$KEYRING] $url $suite main" >"$apt_dir/sources.list"
  # archived suites and snapshots carry an expired Valid-Until; the signature is still checked
  local apt_opts=(-o "Dir::Etc::sourcelist=$apt_dir/sources.list" -o "Dir::Etc::sourceparts=$apt_dir/parts"
                  -o "Dir::State::Lists=$apt_dir/lists" -o "Acquire::Check-Valid-Until=false"
                  -o "Acquire::Retries=1" -o "Acquire::http::Timeout=30")
  apt-get -qq "${apt_opts[@]}" update >&2 || return 1
  (cd "$dest" && apt-get -qq "${apt_opts[@]}" source --download-only "caffe=${VERSION}-${DEB_REVISION}" >&2) || true
  check_sha "$dest/$ORIG" "$ORIG_SHA256"
}

fetch_pool_file() {  # fetch_pool_file URL DEST_DIR: the tarball's pool path, checked against the pin only
  local url="$1/$POOL_PATH" dest="$2"
  command -v curl >/dev/null || { echo "recipes/caffe: no curl for $url" >&2; return 1; }
  curl -fsSL --retry 1 --connect-timeout 20 -o "$dest/$ORIG.part" "$url" >&2 || { rm -f "$dest/$ORIG.part"; return 1; }
  if check_sha "$dest/$ORIG.part" "$ORIG_SHA256"; then mv "$dest/$ORIG.part" "$dest/$ORIG"; return 0; fi
  echo "recipes/caffe: $url does not have the pinned sha256 $ORIG_SHA256: ignored" >&2
  rm -f "$dest/$ORIG.part"
  return 1
}

fetch_tarball() {  # the checked orig tarball in $CACHE/sources; prints which archive gave it (stderr)
  local src_dir="$CACHE/sources"
  mkdir -p "$src_dir"
  check_sha "$src_dir/$ORIG" "$ORIG_SHA256" && return 0
  rm -f "$src_dir/$ORIG"  # a wrong or partial file is never used
  local archives="${CAFFE_SOURCE_ARCHIVES:-$DEFAULT_ARCHIVES}" url suite n=0 tried=()
  while read -r url suite; do
    [ -n "$url" ] || continue
    n=$((n + 1))
    echo "recipes/caffe: fetching Debian $suite's caffe source from $url (apt-get source --download-only)" >&2
    if fetch_with_apt "$url" "$suite" "$src_dir" "$n"; then
      echo "recipes/caffe: $ORIG from $url (apt, signed index; sha256 pinned)" >&2; return 0
    fi
    rm -f "$src_dir/$ORIG"
    if fetch_pool_file "$url" "$src_dir"; then
      echo "recipes/caffe: $ORIG from $url/$POOL_PATH (sha256 pinned)" >&2; return 0
    fi
    tried+=("$url")
  done <<<"$archives"
  die "$ORIG with sha256 $ORIG_SHA256 could not be fetched from any of: ${tried[*]:-no archive}. Fix: check the network, or set CAFFE_SOURCE_ARCHIVES to a Debian mirror (\"URL SUITE\" per line) that holds it"
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

# Patch 2's cuDNN layer compiled on its own (the rest of Caffe stays CPU_ONLY): nvcc for the .cu, the host
# compiler for the .cpp, with -DUSE_CUDNN against the headers of PyPI's cuDNN / cuBLAS / cuRAND wheels
# (pinned by sha256, fetched by pip into the cache, headers only used) and the generated caffe.pb.h of a
# build. Prints the folder of the two objects; "no nvcc" (exit 3) when there is no CUDA compiler.
CUDA_WHEELS=(
  "nvidia-cudnn-cu13==9.28.1.4 a54f205b1db1f2895d99f398754db1369816f0569dd459731f925635cf7b65ec"
  "nvidia-cublas==13.10.0.20 dcc6d63884c53d07e267ce7e6feac17b2538cebaafec5db865736c3e28e4dc84"
  "nvidia-curand==10.4.5.25 22bb226a857e5888fe6b54ae465fc4371296bcff13a35f79e19691bcf454f529"
)
cudnn_layer() {  # cudnn_layer BUILD_DIR (a `build` output: its ../src is the patched tree)
  local build="$1" nvcc="${NVCC:-}"
  [ -n "$nvcc" ] || nvcc="$(command -v nvcc || true)"
  [ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; }
  [ -n "$nvcc" ] || { echo "recipes/caffe: no nvcc (set NVCC): patch 2's cuDNN layer not compiled" >&2; exit 3; }
  local src="$build/../src" out="$build/cudnn_layer" wheels="$CACHE/cuda-wheels" python="${PYTHON:-python3}"
  [ -f "$src/src/caffe/layers/cudnn_batch_norm_layer.cu" ] || die "$src has no patch 2 (cudnn_batch_norm_layer.cu)"
  mkdir -p "$wheels/headers" "$out"
  local entry req sha file
  for entry in "${CUDA_WHEELS[@]}"; do
    req="${entry% *}"; sha="${entry#* }"
    file=$(ls "$wheels"/"$(echo "${req%%==*}" | tr - _)"-"${req#*==}"-*.whl 2>/dev/null | head -1 || true)
    if [ -z "$file" ] || ! check_sha "$file" "$sha"; then
      "$python" -m pip download -q --no-deps --only-binary=:all: "$req" -d "$wheels" >&2 || die "pip download $req failed"
      file=$(ls "$wheels"/"$(echo "${req%%==*}" | tr - _)"-"${req#*==}"-*.whl | head -1)
      check_sha "$file" "$sha" || die "$file: sha256 is not the pinned $sha"
    fi
    unzip -q -o "$file" '*/include/*' -d "$wheels/headers" || die "unzip $file failed"
  done
  # the CUDA runtime headers of this nvcc, for the host compiler (nvcc itself knows them)
  local cuda_inc=()
  cuda_inc=($("$nvcc" --dryrun -c -x cu /dev/null 2>&1 | grep -o 'INCLUDES="-I[^"]*"' | head -1 | sed 's/^INCLUDES="//; s/"$//'))
  [ "${#cuda_inc[@]}" -gt 0 ] || die "cannot read the CUDA include folder from $nvcc --dryrun"
  local inc=(-I"$src/include" -I"$build/include" -I"$wheels/headers/nvidia/cudnn/include"
             -I"$wheels/headers/nvidia/cu13/include" "${cuda_inc[@]}"
             -I/usr/include/hdf5/serial -I/usr/include/opencv4)
  "$nvcc" -std=c++17 -arch="${CUDA_ARCH:-sm_90}" -DUSE_CUDNN "${inc[@]}" \
    -c "$src/src/caffe/layers/cudnn_batch_norm_layer.cu" -o "$out/cudnn_batch_norm_layer.cu.o" >&2 \
    || die "nvcc failed on cudnn_batch_norm_layer.cu"
  "${CXX:-c++}" -std=c++17 -DUSE_CUDNN "${inc[@]}" \
    -c "$src/src/caffe/layers/cudnn_batch_norm_layer.cpp" -o "$out/cudnn_batch_norm_layer.cpp.o" >&2 \
    || die "c++ failed on cudnn_batch_norm_layer.cpp"
  echo "$out"
}

case "${1:-}" in
  source) shift; tree="$(source_tree)" || exit 1; report "$tree" "${1:-}" ;;
  build) shift; build "${1:-}" ;;
  cudnn-layer) shift; [ -n "${1:-}" ] || die "usage: build.sh cudnn-layer BUILD_DIR"; cudnn_layer "$1" ;;
  *) die "usage: build.sh source|build [OUT_FILE] | cudnn-layer BUILD_DIR" ;;
esac

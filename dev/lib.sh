# Shared helpers of dev/main.sh and dev/test.sh: stage timing and the tool's virtual environment.
# shellcheck shell=bash
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$REPO_ROOT/.venv"
TOOL_PYTHON_VERSION="${AIACC_TOOL_PYTHON:-3.11}"
STAGE_TIMES=()

stage() {  # stage NAME CMD...: run one stage, print its time, remember it for the summary
  local name="$1"; shift
  local start end
  start=$(date +%s.%N)
  printf '\n=== stage: %s ===\n' "$name"
  "$@"
  end=$(date +%s.%N)
  local took
  took=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f", e - s }')
  printf '=== stage %s took %ss ===\n' "$name" "$took"
  STAGE_TIMES+=("$name: ${took}s")
}

stage_summary() {
  printf '\n=== stage times ===\n'
  printf '  %s\n' "${STAGE_TIMES[@]}"
}

find_python() {  # the pyenv interpreter of a minor version, e.g. find_python 3.11
  local minor="$1" candidate
  for candidate in /root/.pyenv/versions/"$minor".*/bin/python"$minor"; do
    [ -x "$candidate" ] && { echo "$candidate"; return 0; }
  done
  command -v "python$minor" && return 0
  echo "no Python $minor found (looked under /root/.pyenv/versions and PATH)" >&2
  return 1
}

apt_install() {  # apt_install PKG...: install the Debian packages that are missing
  local missing=()
  local pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing Debian packages: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

bootstrap_tool() {  # the build tool and its test dependencies in .venv
  apt_install cmake ninja-build g++ git curl  # curl: recipes/mpi/fetch.sh (the MPI plugins' headers)
  if [ ! -x "$VENV/bin/python" ]; then
    "$(find_python "$TOOL_PYTHON_VERSION")" -m venv "$VENV"
  fi
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e "$REPO_ROOT[test]"
}

gloo_recipe() {  # Gloo from Debian's source by recipes/gloo/build.sh (cached in .cache/gloo); prefix in .cache/gloo/prefix
  apt_install cmake ninja-build g++ xz-utils patch debian-archive-keyring
  mkdir -p "$REPO_ROOT/.cache/gloo"
  bash "$REPO_ROOT/recipes/gloo/build.sh" "$REPO_ROOT/.cache/gloo/prefix" >/dev/null
}

nccl_recipe() {  # nvidia-nccl-cu12 + nvidia-cuda-runtime-cu12 wheels unpacked by recipes/nccl/fetch.sh (189 MB once,
  # cached in .cache/nccl): nccl.h for the engine's device build, libnccl.so.2 for its tests; folder in .cache/nccl/site
  mkdir -p "$REPO_ROOT/.cache/nccl"
  bash "$REPO_ROOT/recipes/nccl/fetch.sh" "$REPO_ROOT/.cache/nccl/site" >/dev/null
}

native_core_ctest() {  # configure + build native/ (core + engine; CUDA kernels when nvcc is there) and run ctest
  apt_install libgtest-dev openmpi-bin mpich  # MPI runtimes for the tests (the plugins' headers: recipes/mpi/fetch.sh)
  gloo_recipe  # cached after the first build: a fraction of a second
  local engine_args=(-DPERSEUS_WITH_ENGINE=ON "-DPERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")")
  local cuda_args=(-DPERSEUS_WITH_CUDA=OFF)
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    # CI compiles two architectures; -DPERSEUS_CUDA_ARCHITECTURES=full builds sm_75 .. sm_120
    cuda_args=(-DPERSEUS_WITH_CUDA=ON -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc
               "-DPERSEUS_CUDA_ARCHITECTURES=${PERSEUS_CUDA_ARCHITECTURES:-75-real;90}")
    # device buffers (NCCL loaded at run time): nccl.h from the wheel, the CUDA runtime headers of that toolkit
    nccl_recipe
    engine_args+=(-DPERSEUS_ENGINE_DEVICE=ON "-DPERSEUS_NCCL_SITE=$(cat "$REPO_ROOT/.cache/nccl/site")")
  fi
  cmake -S "$REPO_ROOT/native" -B "$REPO_ROOT/native/build" -G Ninja -DCMAKE_BUILD_TYPE=Release "${cuda_args[@]}" "${engine_args[@]}" >/dev/null
  cmake --build "$REPO_ROOT/native/build" -j2
  ctest --test-dir "$REPO_ROOT/native/build" -j2 --output-on-failure
}

caffe_library() {  # libperseus-caffe (native/bindings/caffe) + its solver-callback driver in native/build-caffe, and
  # Caffe's checked source (recipes/caffe/build.sh source): what CI's Caffe tests need (the full Caffe build is opt-in)
  apt_install openmpi-bin mpich git debian-archive-keyring
  gloo_recipe
  cmake -S "$REPO_ROOT/native/bindings/caffe" -B "$REPO_ROOT/native/build-caffe" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    "-DPERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")" >/dev/null
  cmake --build "$REPO_ROOT/native/build-caffe" -j2
  bash "$REPO_ROOT/recipes/caffe/build.sh" source >/dev/null
}

caffe_release() {  # the main job's Caffe artifacts: libperseus-caffe (Gloo + engine, not Caffe itself; ~1 CPU-min cold,
  # seconds when unchanged) packaged with the three patches into dist/<release>/caffe/ for `aiacc-build index`
  apt_install cmake ninja-build g++ xz-utils patch debian-archive-keyring
  "$VENV/bin/aiacc-build" caffe library >/dev/null
  "$VENV/bin/aiacc-build" caffe package --dist "$REPO_ROOT/dist"
}

caffe_full() {  # opt-in: `aiacc-build caffe build` (its Debian deps by apt_install, then ~8 CPU-min cold, 4 s when cached)
  "$VENV/bin/aiacc-build" caffe build
}

dev_release() {  # the newest release: the version of the dev venv's perseus-common and bindings, as of the built wheels
  "$VENV/bin/python" -c 'from aiacc_build.matrix.loader import default_release; print(default_release())'
}

binding_frameworks() {  # every framework adapter with a binding folder, one a line: each has native/bindings/<name>/dev_env.sh
  local name
  for name in $("$VENV/bin/aiacc-build" frameworks list --names); do
    [ -d "$REPO_ROOT/native/bindings/$name" ] && echo "$name"
  done
  return 0
}

built_wheel() {  # built_wheel DISTRIBUTION FRAMEWORK_VERSION: the wheel of $AIACC_BUILT_MIRROR (set by dev/test.sh
  # after its build-local-cell stage), or nothing
  local found
  [ -n "${AIACC_BUILT_MIRROR:-}" ] || return 0
  for found in "$AIACC_BUILT_MIRROR"/cpu/"$1"-*+"$2"-*.whl; do
    [ -f "$found" ] && echo "$found"
  done
  return 0
}

install_binding() {  # install_binding FRAMEWORK DISTRIBUTION FRAMEWORK_VERSION: into .venv the wheel of
  # $AIACC_BUILT_MIRROR (built, repaired and tested by dev/test.sh's build-local-cell stage: not compiled twice),
  # else native/bindings/FRAMEWORK compiled with the engine and Gloo (build tree native/build-FRAMEWORK)
  local wheel
  wheel="$(built_wheel "$2" "$3")"
  if [ -n "$wheel" ]; then
    echo "$2: installing $wheel"
    "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
    return 0
  fi
  gloo_recipe  # the binding links the engine, and Gloo with it (cached after the first build)
  PERSEUS_RELEASE="$(dev_release)" CMAKE_BUILD_PARALLEL_LEVEL=2 "$VENV/bin/python" -m pip install -q \
    --no-build-isolation --no-deps -C "build-dir=$REPO_ROOT/native/build-$1" \
    -C "cmake.define.PERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")" "$REPO_ROOT/native/bindings/$1"
}

engine_cuda_compile() {  # -DPERSEUS_ENGINE_CUDA=ON: the core's kernels and the engine's device code built with the
  # provisioned CUDA 12.4 toolkit (aiacc-build toolkit fetch 12.4: ~1 GB once), compile only (no GPU here), in native/build-cuda
  gloo_recipe
  nccl_recipe
  "$VENV/bin/aiacc-build" toolkit fetch 12.4 >/dev/null
  local toolkit="${AIACC_TOOLKITS_DIR:-$REPO_ROOT/.cache/aiacc-build/toolkits}/cuda-12.4"
  cmake -S "$REPO_ROOT/native" -B "$REPO_ROOT/native/build-cuda" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DPERSEUS_WITH_CUDA=ON "-DCMAKE_CUDA_COMPILER=$toolkit/bin/nvcc" "-DCUDAToolkit_ROOT=$toolkit" \
    -DCMAKE_CUDA_HOST_COMPILER="$(command -v "${CXX:-g++}")" \
    -DPERSEUS_WITH_ENGINE=ON -DPERSEUS_ENGINE_CUDA=ON "-DPERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")" \
    "-DPERSEUS_NCCL_SITE=$(cat "$REPO_ROOT/.cache/nccl/site")" >/dev/null
  cmake --build "$REPO_ROOT/native/build-cuda" -j2
}

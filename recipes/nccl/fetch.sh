#!/usr/bin/env bash
# The project's NCCL recipe: PyPI's nvidia-nccl-cu12 and nvidia-cuda-runtime-cu12 wheels (pinned below by
# version and sha256, fetched with `pip download --require-hashes`), unpacked into a site-packages-like
# folder: <site>/nvidia/nccl/{include/nccl.h,lib/libnccl.so.2} and <site>/nvidia/cuda_runtime/{include,lib}.
# The engine compiles against these headers and loads the libraries at run time (dlopen); neither is
# linked, grafted or committed.
#
#   bash recipes/nccl/fetch.sh [SITE_FILE]   # prints the site folder (and writes it to SITE_FILE)
#
# Environment: NCCL_CACHE_DIR (default <repo>/.cache/nccl), PYTHON (default <repo>/.venv/bin/python, else
# python3). The NCCL wheel is 189 MB (once; cached); the CUDA runtime wheel 0.9 MB.
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${NCCL_CACHE_DIR:-$REPO_ROOT/.cache/nccl}"
mkdir -p "$CACHE" && CACHE="$(cd "$CACHE" && pwd)"

# NCCL 2.21.5 and CUDA runtime 12.4.127: the pair torch 2.6's CUDA 12.4 wheels depend on (the provisioned
# toolkit is 12.4). sha256 from PyPI's JSON API (digests of the manylinux2014_x86_64 files).
NCCL_VERSION="2.21.5"
NCCL_SHA256="8579076d30a8c24988834445f8d633c697d42397e92ffc3f63fa26766d25e0a0"
CUDART_VERSION="12.4.127"
CUDART_SHA256="64403288fa2136ee8e467cdc9c9427e0434110899d07c779f25b5c068934faa5"

die() { echo "recipes/nccl: $*" >&2; exit 1; }
[ "$(uname -m)" = "x86_64" ] || die "only x86_64 is pinned here (got $(uname -m))"

site="$CACHE/nccl-${NCCL_VERSION}-cudart-${CUDART_VERSION}/site"
report() { echo "$site"; [ "${1:-}" = "" ] || echo "$site" >"$1"; }
if [ -f "$site/.complete" ] && [ -f "$site/nvidia/nccl/lib/libnccl.so.2" ]; then
  echo "recipes/nccl: cached $site" >&2
  report "${1:-}"; exit 0
fi

python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x "$REPO_ROOT/.venv/bin/python" ]; then python="$REPO_ROOT/.venv/bin/python"; else python="$(command -v python3)"; fi
fi
"$python" -m pip --version >/dev/null 2>&1 || die "$python has no pip: set PYTHON to an interpreter with pip"

wheels="$CACHE/wheels"
mkdir -p "$wheels"
req="$CACHE/requirements.txt"
cat >"$req" <<REQ
nvidia-nccl-cu12==${NCCL_VERSION} --hash=sha256:${NCCL_SHA256}
nvidia-cuda-runtime-cu12==${CUDART_VERSION} --hash=sha256:${CUDART_SHA256}
REQ
echo "recipes/nccl: pip download nvidia-nccl-cu12==$NCCL_VERSION nvidia-cuda-runtime-cu12==$CUDART_VERSION (hash-checked)" >&2
"$python" -m pip download -q --no-deps --require-hashes --only-binary=:all: \
  --platform manylinux2014_x86_64 --implementation py --python-version 3 -d "$wheels" -r "$req" >&2 ||
  die "pip download failed (see above): the wheels come from PyPI (or PIP_INDEX_URL)"

rm -rf "$site" && mkdir -p "$site"
for whl in "$wheels"/nvidia_nccl_cu12-"$NCCL_VERSION"-*.whl "$wheels"/nvidia_cuda_runtime_cu12-"$CUDART_VERSION"-*.whl; do
  [ -f "$whl" ] || die "missing $whl after pip download"
  "$python" -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$whl" "$site"
done
[ -f "$site/nvidia/nccl/include/nccl.h" ] || die "no nvidia/nccl/include/nccl.h in the NCCL wheel"
[ -f "$site/nvidia/cuda_runtime/include/cuda_runtime_api.h" ] || die "no cuda_runtime_api.h in the CUDA runtime wheel"
touch "$site/.complete"
report "${1:-}"

#!/usr/bin/env bash
# The prepared command for a lent GPU machine (docs/device.md, "GPU check"):
#   1. prints which NCCL and CUDA runtime torch's site-packages holds (the image's nvidia-*-cu13 packages:
#      nvidia/nccl/lib, nvidia/cu13/lib);
#   2. builds perseus-common and the perseus_torch binding there for the machine's torch (nvcc, sm_90 SASS + PTX,
#      nccl.h of torch's nvidia-nccl package, the carried Gloo prefix .cache/gloo/*/install), into that Python;
#   3. runs bench/gpu_device_check.py --torch with torch's site-packages as --site (the engine's own search must
#      find torch's libraries) against the carried native/build (configured here with CUDA + device buffers).
# GPU_CHECK_TORCH=0 skips 2 and the torch steps. Output is teed to $OUT/gpu_check.log when $OUT is set.
#
#   bash bench/gpu_device_run.sh [--build native/build]
#   (from the development host: carry native/build, .cache/gloo/<id>/install and .cache/mpi/<id> (its root/))
set -uo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
LOG="${OUT:-/tmp}/gpu_check.log"
RC_FILE="$(mktemp)"
{
  echo "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
  site="$("$PY" - <<'PY'
import os, sysconfig
print(sysconfig.get_paths()["purelib"])
PY
)"
  nccl="$(ls "$site"/nvidia/nccl/lib/libnccl.so.2 "$site"/nvidia/*/lib/libnccl.so.2 2>/dev/null | head -1)"
  cudart="$(ls "$site"/nvidia/cuda_runtime/lib/libcudart.so.1[23] "$site"/nvidia/*/lib/libcudart.so.1[23] 2>/dev/null | head -1)"
  echo "== torch site: $site"
  echo "== torch's NCCL: ${nccl:-none}; torch's CUDA runtime: ${cudart:-none}"
  "$PY" -c 'import torch; print("== torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version())'
  torch_args=()
  if [ "${GPU_CHECK_TORCH:-1}" = "1" ]; then
    gloo="$(ls -d "$REPO_ROOT"/.cache/gloo/*/install 2>/dev/null | head -1)"
    # the MPI plugins' pinned headers (recipes/mpi): carried, since the machine reaches no network
    mpi_root="$(ls -d "$REPO_ROOT"/.cache/mpi/openmpi-*/root 2>/dev/null | head -1)"
    release="${PERSEUS_RELEASE:-2.0.0}"
    started=$(date +%s)
    PERSEUS_RELEASE="$release" "$PY" -m pip install -q --no-index --no-deps --no-build-isolation "$REPO_ROOT/native/runtime" &&
    PERSEUS_RELEASE="$release" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$PY" -m pip install -q --no-index --no-deps \
      --no-build-isolation -C "build-dir=/tmp/perseus-build-torch" -C "cmake.define.PERSEUS_GLOO_PREFIX=$gloo" \
      ${mpi_root:+-C "cmake.define.PERSEUS_MPI_ROOT=$mpi_root"} \
      -C "cmake.define.PERSEUS_CUDA_ARCHITECTURES=90" "$REPO_ROOT/native/bindings/torch"
    echo "== perseus_torch build for this torch: exit $? after $(( $(date +%s) - started )) s"
    torch_args=(--torch)  # a failed build fails the torch steps
  fi
  (cd /tmp && PYTHONUNBUFFERED=1 "$PY" "$REPO_ROOT/bench/gpu_device_check.py" --site "$site" "${torch_args[@]}" "$@")
  rc=$?; echo "$rc" >"$RC_FILE"; echo "== check exit $rc"
} 2>&1 | tee "$LOG"
exit "$(cat "$RC_FILE")"

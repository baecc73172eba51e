#!/usr/bin/env bash
# The prepared command for a lent GPU machine (docs/device.md, "GPU check"): prints which NCCL and CUDA runtime
# torch's site-packages holds (the image's nvidia-*-cu13 packages: nvidia/nccl/lib, nvidia/cu13/lib), and runs
# bench/gpu_device_check.py with that site-packages as --site, so the engine's own search must find them, against
# the carried native/build (configured here with CUDA + device buffers,
# sm_90; see docs/device.md). Output is teed to $OUT/gpu_check.log when $OUT is set.
#
#   bash bench/gpu_device_run.sh [--build native/build]
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
  PYTHONUNBUFFERED=1 "$PY" "$REPO_ROOT/bench/gpu_device_check.py" --site "$site" "$@"
  rc=$?; echo "$rc" >"$RC_FILE"; echo "== check exit $rc"
} 2>&1 | tee "$LOG"
exit "$(cat "$RC_FILE")"

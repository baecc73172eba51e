#!/usr/bin/env bash
# The MXNet development environment (dev/test.sh's mxnet-binding stage): .venv-mxnet (Python 3.9, mxnet
# 1.9.1, numpy<1.24) with perseus_mxnet built from this folder against that mxnet and installed (tests/mxnet
# runs its ranks in it).
# Re-running rebuilds the binding incrementally (its build tree is .cache/mxnet-binding-build); with
# AIACC_BUILT_MIRROR (dev/test.sh) it installs that mirror's built perseus_mxnet wheel instead.
#   bash native/bindings/mxnet/dev_env.sh     # then: .venv/bin/python -m pytest tests/mxnet -x -q
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$REPO_ROOT"
VENV="$REPO_ROOT/.venv-mxnet"
PY39="${PERSEUS_MXNET_BASE_PYTHON:-$(ls -d /root/.pyenv/versions/3.9.*/bin/python 2>/dev/null | tail -1)}"
if [ -z "$PY39" ] || [ ! -x "$PY39" ]; then
  echo "native/bindings/mxnet/dev_env.sh: no Python 3.9 (mxnet 1.9.1 runs on 3.9): set PERSEUS_MXNET_BASE_PYTHON" >&2
  exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
  "$PY39" -m venv "$VENV"
  "$VENV/bin/pip" install -q -U pip
fi
"$VENV/bin/pip" install -q 'mxnet==1.9.1' 'numpy<1.24' scikit-build-core ninja cmake
# AIACC_BUILT_MIRROR (dev/test.sh, after its build-local-cell stage): install the perseus_mxnet wheel that
# stage built and tested instead of compiling the binding a second time
BUILT=""
if [ -n "${AIACC_BUILT_MIRROR:-}" ]; then
  for wheel in "$AIACC_BUILT_MIRROR"/cpu/perseus_mxnet-*+1.9.1-*.whl; do
    [ -f "$wheel" ] && BUILT="$wheel"
  done
fi
if [ -n "$BUILT" ]; then
  echo "perseus_mxnet: installing $BUILT"
  "$VENV/bin/pip" install -q --no-deps --force-reinstall "$BUILT"
else
  GLOO_PREFIX="$(bash recipes/gloo/build.sh)"
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" "$VENV/bin/pip" install -q --no-build-isolation \
    --no-deps --force-reinstall -C build-dir="$REPO_ROOT/.cache/mxnet-binding-build" \
    -C cmake.define.PERSEUS_GLOO_PREFIX="$GLOO_PREFIX" ./native/bindings/mxnet
fi
PYTHONPATH="$REPO_ROOT/native/runtime" "$VENV/bin/python" -m perseus.mxnet._selftest

#!/usr/bin/env bash
# The torch development environment (dev/test.sh's torch-binding stage): torch 2.13.0 (local wheel),
# perseus-common and this binding, compiled with the engine (build tree native/build-torch), into .venv; with
# AIACC_BUILT_MIRROR (dev/test.sh, after its build-local-cell stage) it installs that mirror's built
# perseus_torch wheel instead of compiling.
#   bash native/bindings/torch/dev_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../dev/lib.sh"
"$VENV/bin/python" -m pip install -q torch==2.13.0 numpy scikit-build-core ninja
release="$(dev_release)"  # one release with the TF/MXNet wheels of build-local-cell
PERSEUS_RELEASE="$release" "$VENV/bin/python" -m pip install -q "$REPO_ROOT/native/runtime"
wheel="$(built_wheel perseus_torch 2.13.0)"
if [ -n "$wheel" ]; then  # built, repaired and tested by the build-local-cell stage: not compiled twice
  echo "perseus_torch: installing $wheel"
  "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
  exit 0
fi
gloo_recipe  # the binding links the engine, and Gloo with it (cached after the first build)
PERSEUS_RELEASE="$release" CMAKE_BUILD_PARALLEL_LEVEL=2 "$VENV/bin/python" -m pip install -q --no-build-isolation \
  -C "build-dir=$REPO_ROOT/native/build-torch" \
  -C "cmake.define.PERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")" \
  "$REPO_ROOT/native/bindings/torch"

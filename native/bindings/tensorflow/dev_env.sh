#!/usr/bin/env bash
# The TensorFlow development environment (dev/test.sh's tensorflow-binding stage): tensorflow-cpu 2.21.0,
# tf_keras and this binding into .venv (next to torch); with AIACC_BUILT_MIRROR (dev/test.sh, after its
# build-local-cell stage) it installs that mirror's built perseus_tensorflow wheel instead of compiling.
#   bash native/bindings/tensorflow/dev_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../dev/lib.sh"
"$VENV/bin/python" -m pip install -q tensorflow-cpu==2.21.0 scikit-build-core ninja
# Keras 2 for TF_USE_LEGACY_KERAS=1 (tests/tensorflow/test_tf_keras2.py); --no-deps: tf-keras requires the
# `tensorflow` distribution, which would install the full TensorFlow next to tensorflow-cpu
"$VENV/bin/python" -m pip install -q --no-deps tf-keras==2.21.0
wheel="$(built_wheel perseus_tensorflow 2.21.0)"
if [ -n "$wheel" ]; then  # built, repaired and tested by the build-local-cell stage: not compiled twice
  echo "perseus_tensorflow: installing $wheel"
  "$VENV/bin/python" -m pip install -q --no-deps --force-reinstall "$wheel"
  exit 0
fi
gloo_recipe  # the binding links the engine, and Gloo with it (cached after the first build)
CMAKE_BUILD_PARALLEL_LEVEL=2 "$VENV/bin/python" -m pip install -q --no-build-isolation --no-deps \
  -C "build-dir=$REPO_ROOT/native/build-tensorflow" \
  -C "cmake.define.PERSEUS_GLOO_PREFIX=$(cat "$REPO_ROOT/.cache/gloo/prefix")" \
  "$REPO_ROOT/native/bindings/tensorflow"

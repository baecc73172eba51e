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
install_binding tensorflow perseus_tensorflow 2.21.0

#!/usr/bin/env bash
# The torch development environment (dev/test.sh's torch-binding stage): torch 2.13.0 (local wheel),
# perseus-common and this binding, compiled with the engine (build tree native/build-torch), into .venv; with
# AIACC_BUILT_MIRROR (dev/test.sh, after its build-local-cell stage) it installs that mirror's built
# perseus_torch wheel instead of compiling.
#   bash native/bindings/torch/dev_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../../dev/lib.sh"
"$VENV/bin/python" -m pip install -q torch==2.13.0 numpy scikit-build-core ninja
PERSEUS_RELEASE="$(dev_release)" "$VENV/bin/python" -m pip install -q "$REPO_ROOT/native/runtime"
install_binding torch perseus_torch 2.13.0

#!/usr/bin/env bash
# The test job: installs what it needs, then runs every test CI runs. Prints each stage's time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

stage bootstrap bootstrap_tool
stage gloo gloo_recipe
stage native-core native_core_ctest
stage caffe-library caffe_library
[ "${AIACC_OPTIN:-}" != "1" ] || stage caffe-full caffe_full
stage torch-binding torch_binding
stage tensorflow-binding tensorflow_binding
stage mxnet-binding bash dev/mxnet_env.sh
stage launch-test-deps bash tests/run/install_test_deps.sh
[ "$#" -gt 0 ] || stage build-local-cell "$VENV/bin/aiacc-build" build --dist "$REPO_ROOT/build/test-dist"
stage pytest "$VENV/bin/python" -m pytest "$@"
stage_summary

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
if [ "$#" -eq 0 ]; then
  # The main job's default cells (torch from this disk, the TensorFlow and MXNet CPU cells): each binding is
  # compiled once, here; the two stages below install these built and tested wheels instead of compiling again.
  stage build-local-cell "$VENV/bin/aiacc-build" build --dist "$REPO_ROOT/build/test-dist"
  export AIACC_BUILT_MIRROR="$REPO_ROOT/build/test-dist/2.0.0"
fi
stage tensorflow-binding tensorflow_binding
stage mxnet-binding bash dev/mxnet_env.sh
stage launch-test-deps bash tests/run/install_test_deps.sh
stage pytest "$VENV/bin/python" -m pytest "$@"
stage_summary

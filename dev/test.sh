#!/usr/bin/env bash
# The test job: installs what it needs, then runs every test CI runs. Prints each stage's time.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

if [ "${1:-}" = "--fast" ]; then
  # The fast tier: every test not marked `integration`, with process starts and socket binds refused
  # (tests/support/fast_tier.py). Uses the .venv a full run made; refreshes only perseus-common (pure Python).
  shift
  [ -x "$VENV/bin/python" ] || { echo "dev/test.sh --fast: no .venv yet; run bash dev/test.sh once" >&2; exit 2; }
  stage perseus-common env PERSEUS_RELEASE="$(dev_release)" "$VENV/bin/python" -m pip install -q --no-deps "$REPO_ROOT/native/runtime"
  stage pytest-fast env AIACC_FAST=1 "$VENV/bin/python" -m pytest -q "$@"
  stage_summary
  exit 0
fi
stage bootstrap bootstrap_tool
stage gloo gloo_recipe
stage native-core native_core_ctest
stage caffe-library caffe_library
[ "${AIACC_OPTIN:-}" != "1" ] || stage caffe-full caffe_full
if [ "$#" -eq 0 ]; then
  # The main job's default cells (those whose framework is on this disk, else each framework's newest CPU cell):
  # each binding is compiled once, here; the binding stages below install these built and tested wheels
  # instead of compiling again (AIACC_BUILT_MIRROR).
  stage build-local-cell "$VENV/bin/aiacc-build" build --dist "$REPO_ROOT/build/test-dist"
  export AIACC_BUILT_MIRROR="$REPO_ROOT/build/test-dist/2.0.0"
fi
frameworks="$(binding_frameworks)"  # an assignment: set -e stops the job when the tool cannot list them
for framework in $frameworks; do  # in the adapters' order (adapters.BUILTIN): a later one installs next to an earlier
  stage "$framework-binding" bash "native/bindings/$framework/dev_env.sh"
done
stage launch-test-deps bash tests/run/install_test_deps.sh
if [ "$#" -eq 0 ]; then
  # the fast tier on its own first: a test that starts a process or binds a socket without its `integration`
  # mark fails here (tests/support/fast_tier.py), so `dev/test.sh --fast` stays fast
  stage pytest-fast-tier env AIACC_FAST=1 "$VENV/bin/python" -m pytest -q
fi
stage pytest "$VENV/bin/python" -m pytest "$@"
stage_summary

#!/usr/bin/env bash
# The main job: build what can be built here, render everything else, write dist/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

stage bootstrap bootstrap_tool
stage render "$VENV/bin/aiacc-build" render
stage check-conda "$VENV/bin/aiacc-build" check conda --dist "$REPO_ROOT/dist"
stage check-ci "$VENV/bin/aiacc-build" check ci --dist "$REPO_ROOT/dist"
stage build-wheels "$VENV/bin/aiacc-build" build
stage caffe-release caffe_release
stage index-mirror "$VENV/bin/aiacc-build" index
stage_summary
printf "\nnext:\n"
"$VENV/bin/python" -m aiacc_build.hints

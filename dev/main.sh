#!/usr/bin/env bash
# The main job: build what can be built here, render everything else, write dist/.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$REPO_ROOT"

stage bootstrap bootstrap_tool
stage render "$VENV/bin/aiacc-build" render
stage_summary

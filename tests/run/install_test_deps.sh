#!/usr/bin/env bash
# What the launch / perseusrun / doctor tests run for real: Open MPI (mpirun), an OpenSSH server and client
# (the two-namespace multi-host test), iproute2 (ip netns), torch 2.13.0 (from local disk), psutil, and
# perseus-common itself (the `perseus` and `perseusrun` commands; not editable, as the torch-binding stage
# installs it: an editable perseus beside an installed perseus/torch would be shadowed) in .venv.
source "$(dirname "${BASH_SOURCE[0]}")/../../dev/lib.sh"
apt_install openmpi-bin openssh-server openssh-client iproute2 procps
PERSEUS_RELEASE="$(dev_release)" "$VENV/bin/python" -m pip install -q "$REPO_ROOT/native/runtime"  # the release of the built wheels
"$VENV/bin/python" -m pip install -q "torch==2.13.0" "psutil>=5"

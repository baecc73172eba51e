#!/bin/sh
# The seed's MXNet launch (manual 4.6): plain mpirun starts this script once per process, which derives
# the process's device from Open MPI's variables and runs the training command given to it:
#
#   mpirun -np 32 -npernode 8 -hostfile mpi_host.txt ./config.sh python -m perseus.mxnet.examples.mxnet_module
#
# The command reads MXNET_VISIBLE_DEVICE (the examples take it as their --gpus default); without GPUs
# the examples run on the CPU. perseus.mxnet finds its rank and peers through MPI itself.
if [ -z "${OMPI_COMM_WORLD_RANK:-}" ] || [ -z "${OMPI_COMM_WORLD_LOCAL_SIZE:-}" ]; then
  echo "config.sh: OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_LOCAL_SIZE are not set: start it with Open MPI's mpirun" >&2
  exit 2
fi
if [ "$#" -eq 0 ]; then
  echo "config.sh: no command: mpirun -np N ./config.sh python train.py ..." >&2
  exit 2
fi
GPU=$((OMPI_COMM_WORLD_RANK % OMPI_COMM_WORLD_LOCAL_SIZE))
export MXNET_VISIBLE_DEVICE="$GPU"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-4}"
exec "$@"
